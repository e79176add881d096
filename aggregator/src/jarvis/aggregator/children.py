"""How Jarvis starts the processes it supervises (servers, tunnels) so they never outlive it."""

from __future__ import annotations

import os
import sys

# Run between Jarvis and the server's command: ask the kernel to SIGKILL this process when Jarvis dies,
# then become the server (exec keeps the setting). A `preexec_fn` would do the same without the extra
# exec, but it forces a real fork() in a process full of gRPC threads, whose fork handlers then
# sometimes abort the child; without one, Python spawns with vfork and no fork handlers run.
_DIE_WITH_PARENT = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\n"  # Jarvis died before the prctl: do not start
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def dies_with_jarvis(argv: list[str]) -> list[str]:
    """`argv` behind the die-with-Jarvis step on Linux, for any child Jarvis supervises (servers, tunnels)."""
    if not sys.platform.startswith("linux"):
        return argv  # elsewhere: own process group + stop on shutdown only
    return [sys.executable, "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]
