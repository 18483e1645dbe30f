"""A pool of fuzz workers (worker.py) fed batches of case indices, surviving their deaths.

`run_cases(batches)` keeps `workers` child processes busy, one thread each. A worker that exits
(a crash, an abort) or stays silent for `timeout` seconds on one case (a hang) is killed and
replaced; that case is recorded as "crash" or "hang" with its seed and index, and the rest of its
batch goes to the new worker. Nothing a case does can stop the run.
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

from cases import make_case

HERE = os.path.dirname(os.path.abspath(__file__))


class Worker:
    def __init__(self, env):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)  # end of file: the worker is gone

    def next(self, timeout):
        """The next message, None if the worker died, "hang" if it said nothing for `timeout` s."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return "hang"

    def why_dead(self):
        self.proc.kill()
        code = self.proc.wait()
        self.log.seek(0)
        tail = self.log.read()[-300:].strip().replace("\n", " | ")
        return "exit status %d%s" % (code, (": " + tail) if tail else "")

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def _op_of(seed, index, ops):
    try:
        return make_case(seed, index, ops).op
    except Exception:  # the generator's own bug; the worker reported it
        return "?"


def _env(ops):
    env = dict(os.environ)
    python_dir = os.path.join(HERE, "..", "..", "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (python_dir, HERE, env.get("PYTHONPATH")) if p)
    env["OMP_NUM_THREADS"] = "1"
    if ops:
        env["FUZZ_OPS"] = ",".join(ops)
    return env


def _start(env, startup_timeout):
    w = Worker(env)
    msg = w.next(startup_timeout)
    if not (isinstance(msg, dict) and msg.get("ready")):
        raise RuntimeError("a fuzz worker failed to start: %s" % w.why_dead())
    return w


def run_cases(batches, workers=2, timeout=30.0, ops=None, on_record=None):
    """Runs every (seed, start, stop) batch; returns the records (dicts: seed, index, op, status,
    diffs, known), one per case. on_record(record) is called as each arrives."""
    env = _env(ops)
    todo = queue.Queue()
    for b in batches:
        todo.put(b)
    records, lock, errors = [], threading.Lock(), []

    def add(rec):
        with lock:
            records.append(rec)
            if on_record:
                on_record(rec)

    def serve():
        try:
            w = _start(env, 120)
            while True:
                try:
                    seed, start, stop = todo.get_nowait()
                except queue.Empty:
                    break
                while start < stop:
                    w.proc.stdin.write("%d %d %d\n" % (seed, start, stop))
                    w.proc.stdin.flush()
                    while start < stop:
                        msg = w.next(timeout)
                        if isinstance(msg, dict) and "index" in msg:
                            add(msg)
                            start = msg["index"] + 1
                            continue
                        kind = "hang" if msg == "hang" else "crash"
                        detail = "no result in %g s" % timeout if kind == "hang" else w.why_dead()
                        if kind == "hang":
                            w.why_dead()
                        add({"seed": seed, "index": start, "op": _op_of(seed, start, ops), "status": kind,
                             "diffs": [[kind, detail]], "known": None})
                        w.close()
                        w = _start(env, 120)
                        start += 1
                        break
                    else:
                        w.next(timeout)  # the batch's {"done": true}
            w.close()
        except Exception as e:  # a pool that cannot start workers must fail the run, loudly
            errors.append(e)

    threads = [threading.Thread(target=serve) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sorted(records, key=lambda r: (r["seed"], r["index"]))
