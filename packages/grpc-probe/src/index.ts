export { grpcHealthCheck, healthCheckRequest, servingStatusOf } from './grpc-check.js';
