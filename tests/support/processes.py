"""This process's live child processes and native threads, for tests that check workers end with their fit."""

import os


def live_children():
    """This process's child processes that have not ended (zombies excluded); [] where there is no /proc."""
    if not os.path.isdir("/proc"):
        return []
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, parent = f.read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if int(parent) == os.getpid() and state != "Z":
            found.append(int(entry))
    return found


def native_threads():
    """Threads of this process, native ones included (Linux ``/proc``); 0 where there is no ``/proc``."""
    path = f"/proc/{os.getpid()}/task"
    return len(os.listdir(path)) if os.path.isdir(path) else 0
