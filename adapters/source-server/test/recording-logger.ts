export { RecordingLogger, RecordingSink, type LogEntry } from '@kubelet-ts/conformance';
