"""Runs a command in a pseudo-terminal, as a person at a terminal would: the terminal is sized
30x100, `stty size` is typed, the terminal is resized to 50x132 (the kernel sends SIGWINCH to the
command, which sends a resize), `stty size` is typed again, then `exit 7`. Prints everything the
terminal showed, then `EXIT <code>` with the command's exit code.

    python3 terminal.py kubectl exec -it pod -- sh
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    set_size(fd, 30, 100)
    shown = b""

    def read_until(token, seconds=30):
        nonlocal shown
        deadline = time.time() + seconds
        while token not in shown:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(f"{token!r} not shown within {seconds} s; shown: {shown!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    raise EOFError(f"the terminal closed before {token!r}; shown: {shown!r}")
                if not chunk:
                    raise EOFError(f"the terminal closed before {token!r}; shown: {shown!r}")
                shown += chunk

    read_until(b"# ")
    os.write(fd, b"stty size; echo one-$((20+1))\n")
    # The typed line is echoed too: wait for what only the command prints.
    read_until(b"one-21\r\n")
    set_size(fd, 50, 132)
    time.sleep(1)
    os.write(fd, b"stty size; echo two-$((20+2))\n")
    read_until(b"two-22\r\n")
    os.write(fd, b"exit 7\n")
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(shown.decode("utf-8", "replace"))
    sys.stdout.write(f"\nEXIT {os.waitstatus_to_exitcode(status)}\n")


main()
