#!/usr/bin/env python3
"""Killed at random moments and resumed, a run is the run that never stopped.

usage: kill_resume.py ZRUN PLAN.zplan [--kills N] [--seed S] [--ranks R]
                      [--sigterm N] -- ZRUN_ARGS...

First runs `zrun PLAN ZRUN_ARGS --trace --save-checkpoint ref` without a
stop: the reference trace (each step's loss bits and a hash of every
persistent tensor) and its final state. Then, in a fresh checkpoint
directory, `zrun PLAN ZRUN_ARGS --trace --resume DIR --checkpoint-every C`
again and again, SIGKILLed each time at a random moment (every fourth time
just as a checkpoint's temporary file appears: during its write); with
--sigterm N, the first N stops are SIGTERMs instead, which must end the run
at a step boundary with a checkpoint and exit status 143. Then it runs on to
the end. Every step line any run printed must be the reference's line for
that step, every step must have been printed by some run, and the final
state's bytes must be the reference's. With --ranks R the job is
`mpirun -np R zrun ...`, a stop hits one rank at random, once MPI has
started, and resume restarts every rank.

Prints one summary line; exit status 1 on any difference.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "distributed"))
from faults import rank_pid  # noqa: E402

MPI_ENV = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")


def command(args, zrun_args, extra):
    cmd = [args.zrun, args.plan] + zrun_args + ["--trace"] + extra
    if args.ranks > 1:
        cmd = ["mpirun", "-np", str(args.ranks)] + cmd
    # Line-buffered: a killed run's printed steps reach the pipe.
    return ["stdbuf", "-oL"] + cmd


def steps_of(text):
    lines = {}
    for line in text.splitlines():
        if line.startswith("step "):
            lines[int(line.split()[1])] = line
    return lines


def victim_pid(args, job):
    """The process to stop, and its rank."""
    if args.ranks == 1:
        return job.pid, 0
    rank = random.randrange(args.ranks)
    deadline = time.time() + 30
    while time.time() < deadline:
        pid = rank_pid(rank, job.pid)
        if pid:
            return pid, rank
        time.sleep(0.01)
    return None, rank


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("zrun")
    parser.add_argument("plan")
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--sigterm", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--every", type=int, default=3)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    zrun_args = argv[split + 1:]
    random.seed(args.seed)
    env = dict(os.environ, **MPI_ENV)
    work = tempfile.mkdtemp(prefix="zcc-kill-resume-")
    try:
        ref_file = os.path.join(work, "ref.safetensors")
        started = time.time()
        ref = subprocess.run(command(args, zrun_args,
                                     ["--save-checkpoint", ref_file]),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=env)
        whole = time.time() - started
        if ref.returncode != 0:
            print("FAIL: the reference run failed:\n" + ref.stdout.decode())
            return 1
        reference = steps_of(ref.stdout.decode())
        directory = os.path.join(work, "ckpt")
        out_file = os.path.join(work, "out.safetensors")
        resumed = command(args, zrun_args,
                          ["--resume", directory, "--checkpoint-every",
                           str(args.every), "--save-checkpoint", out_file])
        seen = {}
        mismatches = []
        stops = {"SIGKILL": 0, "SIGKILL in a write": 0, "SIGTERM": 0}
        finished = False

        def collect(text, label):
            for step, line in steps_of(text).items():
                if reference.get(step) != line:
                    mismatches.append("%s: %s, the reference: %s" %
                                      (label, line, reference.get(step)))
                seen[step] = line

        timeout = 120
        for attempt in range(args.kills):
            job = subprocess.Popen(resumed, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
            term = attempt < args.sigterm
            in_write = not term and attempt % 4 == 3
            victim, rank = victim_pid(args, job)
            killed = False
            # About the whole run's time over the kills: each run gets on
            # a little, so most of the kills land before the end.
            delay = random.uniform(0.1, 1.9) * whole / args.kills
            if term:
                delay = max(delay, 0.2)  # past the start, in the steps
            if args.ranks > 1:
                # Past MPI's start (Open MPI may wait for a rank killed in
                # MPI_Init instead of ending the job).
                delay += 0.3
            if in_write:
                # Just as a checkpoint's temporary file appears (else at
                # three times the delay).
                deadline = time.time() + 3 * delay
                while job.poll() is None and time.time() < deadline:
                    if os.path.isdir(directory) and any(
                            n.endswith(".tmp") for n in os.listdir(directory)):
                        break
            else:
                time.sleep(delay)
            if job.poll() is None and victim:
                try:
                    os.kill(victim, signal.SIGTERM if term else signal.SIGKILL)
                    wrote = in_write and os.path.isdir(directory) and any(
                        n.endswith(".tmp") for n in os.listdir(directory))
                    stops["SIGTERM" if term else
                          "SIGKILL in a write" if wrote else "SIGKILL"] += 1
                    killed = not term
                except ProcessLookupError:
                    pass
            try:
                out, _ = job.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                print("FAIL: run %d did not end within %d s of its %s" %
                      (attempt, timeout, "SIGTERM" if term else "SIGKILL"))
                return 1
            text = out.decode(errors="replace")
            collect(text, "run %d" % attempt)
            if term and job.returncode not in (0, 143):
                print("FAIL: SIGTERM gave exit status %d:\n%s" %
                      (job.returncode, text))
                return 1
            if term and job.returncode == 143 and not (
                    "stopped by SIGTERM" in text or
                    "stopped by another rank's signal" in text):
                print("FAIL: SIGTERM's exit did not say so:\n" + text)
                return 1
            if (killed and args.ranks > 1 and job.returncode != 0 and
                    not re.search(r"rank %d\b.*exited on signal 9" % rank,
                                  text.replace("\n", " "))):
                print("FAIL: the job did not name its killed rank %d:\n%s" %
                      (rank, text))
                return 1
            if job.returncode == 0:
                finished = True
                break
        if not finished:
            last = subprocess.run(resumed, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env)
            collect(last.stdout.decode(errors="replace"), "the last run")
            if last.returncode != 0:
                print("FAIL: the last resume failed:\n" +
                      last.stdout.decode(errors="replace"))
                return 1
        missing = sorted(set(reference) - set(seen))
        same_state = (open(ref_file, "rb").read() ==
                      open(out_file, "rb").read())
        print("%d steps, %d ranks: %d SIGKILLs (%d during a checkpoint "
              "write), %d SIGTERMs; %d step lines compared, %d differ, "
              "%d never printed; final state %s" %
              (len(reference), args.ranks,
               stops["SIGKILL"] + stops["SIGKILL in a write"],
               stops["SIGKILL in a write"], stops["SIGTERM"], len(seen),
               len(mismatches), len(missing),
               "bit-identical" if same_state else "DIFFERS"))
        for m in mismatches[:5]:
            print("  " + m)
        if mismatches or missing or not same_state:
            if missing:
                print("  never printed: steps %s" % missing[:10])
            return 1
        print("ok")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
