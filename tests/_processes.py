"""This process's live child processes, for tests that check forked workers end with their fit."""

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
