#!/usr/bin/env python3
"""A rank that dies or hangs ends a data-parallel job, named, in bounded time.

usage: faults.py PLAN.zplan kill|hang

Starts `mpirun -np 2 zrun PLAN --steps 1000000` (synthetic data), waits until
both ranks are training, then SIGKILLs (kill) or SIGSTOPs (hang) rank 1 and
times how long the job takes to end. Prints the exit status, the seconds, and
the job's lines that name rank 1. Exit status 1 when the job did not end
within 60 s, ended with status 0, or never named rank 1.
"""
import os
import signal
import subprocess
import sys
import time

LIMIT = 60


def parent(pid):
    """The parent of `pid`, or 0."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def descends(pid, ancestor):
    while pid > 1:
        if pid == ancestor:
            return True
        pid = parent(pid)
    return False


def rank_pid(rank, job):
    """The pid of the zrun process of `rank` in the job started as `job`
    (its MPI environment says; other jobs may be running beside it)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or not descends(int(entry), job):
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            if not argv or not argv[0].endswith(b"zrun"):
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
            return int(entry)
    return None


def main():
    plan, fault = sys.argv[1], sys.argv[2]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    cmd = ["mpirun", "-np", "2", "zrun", plan, "--steps", "1000000",
           "--print-every", "100", "--collective-timeout", "5"]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=env)
    victim = None
    deadline = time.time() + 30
    while victim is None and time.time() < deadline:
        victim = rank_pid(1, job.pid)
        time.sleep(0.2)
    if victim is None:
        job.kill()
        print("FAIL: rank 1 never started")
        return 1
    time.sleep(3)  # both ranks past load, in their steps
    if job.poll() is not None:
        print("FAIL: the job ended before the fault:\n" +
              job.stdout.read().decode(errors="replace"))
        return 1
    os.kill(victim, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    start = time.time()
    try:
        out, _ = job.communicate(timeout=LIMIT)
        seconds = time.time() - start
    except subprocess.TimeoutExpired:
        job.kill()
        out, _ = job.communicate()
        seconds = None
    finally:
        # A stopped rank the job failed to end must not outlive the test.
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError:
            pass
    text = out.decode(errors="replace")
    named = [l.strip() for l in text.splitlines() if "rank 1" in l]
    print("fault %s: exit status %s after %s" % (
        fault, job.returncode,
        "%.1f s" % seconds if seconds is not None else "more than %d s" % LIMIT))
    for line in named:
        print("names rank 1: " + line)
    if seconds is None or job.returncode == 0 or not named:
        print("FAIL\n" + text)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
