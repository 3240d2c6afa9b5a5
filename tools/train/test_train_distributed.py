"""Tests of train.py's scale-out paths, run on the CPU (gloo) so they run everywhere:

- two processes under torchrun (DistributedDataParallel, each taking its own batches) end in the
  same weights and balancing biases as one process that accumulates the same two batches per step
  (--accum 2): a wrong batch split, gradients not averaged, or biases nudged by one process's
  load alone all change the weights or biases;
- batches prepared by the prefetch thread give the same weights as batches prepared in the loop;
- --amp bf16 (autocast) really runs the products in bf16, keeps routing and the loss in f32, and
  trains: the loss falls over a few steps on a tiny set.
- the --nproc launcher, with stand-in processes: clean exits succeed, a failure fails the launch
  and stops the others, and a process still leaving the group after another ended cleanly has
  its stacks printed and is killed instead of being waited for for ever.

A tiny data directory (random log-mel features, short letter transcripts) is written to a
temporary folder. Needs python3-torch with torch.distributed (gloo); exits 77 without, which ctest
reports as skipped (not passed).

  /usr/bin/python3 tools/train/test_train_distributed.py
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import torch
    import torch.distributed
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        raise ImportError("torch.distributed with gloo")
except ImportError as e:
    print(f"SKIPPED: {e} is not available", file=sys.stderr)
    sys.exit(77)
import numpy as np  # noqa: E402

TRAIN = os.path.join(HERE, "train.py")


def write_data(root: str, seed: int) -> None:
    """A train split of 16 utterances and a dev split of 4: 100-180 frames of random log-mel
    (mean 8, sd 2), transcripts of 2-3 random short words."""
    rnd = random.Random(seed)
    gen = np.random.default_rng(seed)
    for split, n in (("train", 16), ("dev", 4)):
        os.makedirs(os.path.join(root, "shards", split), exist_ok=True)
        os.makedirs(os.path.join(root, "feats", split), exist_ok=True)
        frames = [rnd.randint(100, 180) for _ in range(n)]
        feats = (gen.standard_normal((sum(frames), 80)) * 2.0 + 8.0).astype(np.float32)
        np.save(os.path.join(root, "feats", split, "f.npy"), feats)
        utts, off = [], 0
        for i, fr in enumerate(frames):
            text = " ".join("".join(rnd.choice("abcdefgh") for _ in range(rnd.randint(2, 4)))
                            for _ in range(rnd.randint(2, 3)))
            utts.append({"id": f"{split}-{i}", "text": text, "duration": fr / 100.0,
                         "feats": {"path": f"feats/{split}/f.npy", "offset": off, "frames": fr}})
            off += fr
        with open(os.path.join(root, "shards", split, f"{split}-0.json"), "w") as f:
            json.dump({"utts": utts}, f)


def common(data: str, out: str, steps: int) -> list[str]:
    # 400 frames per batch: 2-3 utterances, 6-8 batches; no masks so that both runs see the same
    # features; warmup 1 so the steps move the weights at full rate.
    return ["--data", data, "--out", out, "--device", "cpu", "--threads", "1", "--seed", "5",
            "--batch-frames", "400", "--warmup", "1", "--lr", "3e-3", "--epochs", "1",
            "--max-steps", str(steps), "--no-spec-augment", "--bias-rate", "0.01",
            "--dist-timeout-min", "3"]


def run(cmd: list[str]) -> str:
    """Runs cmd (and every process it starts, in a session of their own, all killed if it
    outlasts 10 minutes); its output, or an AssertionError with the output's end."""
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{' '.join(cmd)} timed out:\n{out[-3000:]}\n{err[-3000:]}")
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{out[-3000:]}\n{err[-3000:]}")
    return out


def losses(out: str) -> list[float]:
    with open(os.path.join(out, "log.jsonl")) as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


class DistributedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="sluice-ddp-")
        cls.data = os.path.join(cls.tmp.name, "data")
        write_data(cls.data, 3)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def ddp_vs_accum(self, impl: str):
        one = os.path.join(self.tmp.name, f"one-{impl}")
        two = os.path.join(self.tmp.name, f"two-{impl}")
        run([sys.executable, TRAIN, *common(self.data, one, 3), "--accum", "2", "--moe-impl", impl])
        # train.py --nproc starts the processes as torchrun would (Debian's torch 1.13 torchrun
        # fails under Python 3.11 before starting any: AttributeError in elastic's to_map).
        out = run([sys.executable, TRAIN, *common(self.data, two, 3), "--moe-impl", impl,
                   "--nproc", "2"])
        self.assertIn("2 process(es) (gloo collectives)", out)
        a = torch.load(os.path.join(one, "last.pt"))
        b = torch.load(os.path.join(two, "last.pt"))
        self.assertEqual(a["state"]["step"], 3)
        self.assertEqual(b["state"]["step"], 3)
        self.assertEqual(a["state"]["batch_in_epoch"], 6)
        self.assertEqual(b["state"]["batch_in_epoch"], 6)
        # The initial weights (same seed) to measure how far the steps moved each tensor.
        torch.manual_seed(5)
        from model import AcousticModel, ModelConfig
        init = AcousticModel(ModelConfig.from_json(a["config"])).state_dict()
        moved = 0
        for name, wa in a["model"].items():
            wb = b["model"][name]
            if name.endswith("_bias") and "moe" in name:
                # Balancing biases move by +-rate per step: identical sign decisions, exactly.
                self.assertTrue(torch.equal(wa, wb), name)
                self.assertGreater(float(wa.abs().max()), 0.0, name)
                continue
            if name.startswith("cmvn"):
                self.assertTrue(torch.equal(wa, wb), name)
                continue
            da, db = wa - init[name], wb - init[name]
            scale = float(da.norm())
            if scale > 0:
                moved += 1
            # The gradients agree up to float summation order (DDP's all-reduce average vs the
            # accumulated mean): the two updates must agree to 1e-3 of their size. Adam's first
            # steps are sign-like, so an element whose gradient is pure rounding noise can
            # differ by up to 2 lr: allow that for at most 1 element in 1000.
            diff = (da - db).abs()
            self.assertLessEqual(float(diff.norm()), 1e-3 * scale + 2 * 3e-3 * 3 * (diff.numel() * 1e-3) ** 0.5,
                                 name)
            self.assertLessEqual(int((diff > 1e-6 + 1e-3 * float(da.abs().max())).sum()),
                                 max(1, diff.numel() // 1000), name)
        self.assertGreater(moved, 10)

    def test_two_processes_equal_one_accumulating_dense(self):
        self.ddp_vs_accum("dense")

    def test_two_processes_equal_one_accumulating_loop(self):
        self.ddp_vs_accum("loop")

    def test_prefetch_changes_nothing(self):
        # The same 3 steps with SpecAugment and time shifts (both drawn from one random stream),
        # batches prepared in the loop or by the prefetch thread two steps ahead: the same
        # augmentation in the same order, so the same weights, bit for bit.
        runs = {}
        for depth in (0, 2):
            out = os.path.join(self.tmp.name, f"prefetch{depth}")
            args = [a for a in common(self.data, out, 3) if a != "--no-spec-augment"]
            run([sys.executable, TRAIN, *args, "--shift-frames", "4", "--prefetch", str(depth)])
            runs[depth] = torch.load(os.path.join(out, "last.pt"))
        self.assertEqual(runs[2]["state"]["step"], 3)
        for name, w in runs[0]["model"].items():
            self.assertTrue(torch.equal(w, runs[2]["model"][name]), name)

    def test_bf16_autocast_trains(self):
        from model import AcousticModel, ModelConfig, LayerNorm
        torch.manual_seed(0)
        model = AcousticModel(ModelConfig())
        seen = {}

        def hook(name):
            def record(mod, inp, out):
                seen.setdefault(name, out.dtype)     # returns None: the output stays as it is
            return record
        model.blocks[0].attn.qkv.register_forward_hook(hook("qkv"))
        model.blocks[0].moe.shared[0].w_up.register_forward_hook(hook("expert"))
        model.blocks[0].moe.router2.register_forward_hook(hook("router"))
        model.blocks[0].ln1.register_forward_hook(hook("ln"))
        self.assertIsInstance(model.blocks[0].ln1, LayerNorm)
        fb = torch.randn(2, 300, 80) * 2 + 8
        lengths = torch.tensor([300, 220])
        for impl in ("loop", "dense"):
            seen.clear()
            for moe in model.moe_layers():
                moe.impl = impl
            ref, _ = model(fb, lengths)
            seen.clear()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits, _ = model(fb, lengths)
            self.assertEqual(seen.get("qkv"), torch.bfloat16, impl)
            self.assertEqual(seen.get("router"), torch.float32, impl)
            self.assertEqual(seen.get("ln"), torch.float32, impl)
            self.assertEqual(seen.get("expert"), torch.bfloat16, impl)
            # bf16 keeps 8 significant bits (relative rounding 2^-9 = 0.2% per product); through
            # about 20 products in a row the logits may drift a few per cent, not more, unless
            # something (a routing or normalisation) runs on garbage.
            rel = float((logits.float() - ref).norm() / ref.norm())
            self.assertGreater(rel, 0.0)
            self.assertLess(rel, 0.05, impl)
        out = os.path.join(self.tmp.name, "bf16")
        run([sys.executable, TRAIN, *common(self.data, out, 12), "--amp", "bf16", "--epochs", "3",
             "--log-every", "1"])
        # 12 steps at 3e-3 on 16 utterances: the CTC loss must fall (a broken bf16 backward, or
        # one that does not reach the weights, leaves it where it started): the last three steps'
        # mean under half the first three's (the batches repeat each epoch).
        loss = losses(out)
        self.assertEqual(len(loss), 12)
        self.assertTrue(all(np.isfinite(x) for x in loss))
        self.assertLess(sum(loss[-3:]), 0.5 * sum(loss[:3]), loss)
        ck = torch.load(os.path.join(out, "last.pt"))
        self.assertEqual(ck["state"]["step"], 12)
        self.assertTrue(all(v.dtype == torch.float32 for k, v in ck["model"].items()
                            if v.is_floating_point()))


# A stand-in for one DDP process, run by launch() as train.py's copies would be. Process 1
# registers train.py's SIGUSR1 stack dump, writes its pid, and says so through a FIFO; process 0
# waits for that word (so process 1 is ready for the signal before the grace can start), then
# ends cleanly ("ok") or with status 3 ("fail"). Process 1 then ends too ("exit") or blocks for
# ever ("hang": what the CI runs saw after the last step).
STAND_IN = """
import faulthandler, os, signal, sys, threading
pidfile, fifo, zero, one = sys.argv[1:5]
if os.environ["RANK"] == "1":
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    open(pidfile, "w").write(str(os.getpid()))
    with open(fifo, "w") as f:
        f.write("ready")
    if one == "hang":
        threading.Event().wait()
    sys.exit(0)
with open(fifo) as f:
    f.read()
sys.exit(0 if zero == "ok" else 3)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class LauncherTest(unittest.TestCase):
    """train.py's own launcher never waits for ever on a process that has finished its work (the
    recipe/train_distributed runs that hung in CI after the last step), and still fails when a
    process fails."""

    def launch(self, zero: str, one: str, grace_s: float):
        import train
        with tempfile.TemporaryDirectory(prefix="sluice-launch-") as tmp:
            script = os.path.join(tmp, "stand_in.py")
            with open(script, "w") as f:
                f.write(STAND_IN)
            pidfile = os.path.join(tmp, "pid")
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            saved = sys.argv
            sys.argv = [script, pidfile, fifo, zero, one]
            r, w = os.pipe()
            err = os.dup(2)
            os.dup2(w, 2)                   # the children's stderr (stack dumps) into the pipe
            try:
                status = train.launch(2, grace_s=grace_s)
            finally:
                os.dup2(err, 2)
                os.close(err)
                os.close(w)
                sys.argv = saved
            with os.fdopen(r) as f:
                text = f.read()
            with open(pidfile) as f:
                pid = int(f.read())
        return status, text, pid

    def test_clean_exits_are_success(self):
        status, text, pid = self.launch("ok", "exit", 60.0)
        self.assertEqual(status, 0, text)
        self.assertNotIn("still leaving", text)
        self.assertFalse(alive(pid))

    def test_a_process_stuck_after_another_ended_cleanly_is_dumped_and_killed(self):
        status, text, pid = self.launch("ok", "hang", 1.0)
        # The clean exit means both had passed the closing barrier: their work is done, so the
        # launch keeps its status (0), with the warning and the stuck process's stacks.
        self.assertEqual(status, 0, text)
        self.assertIn("1 process(es) still leaving the group 1 s after another ended cleanly",
                      text)
        self.assertIn("Current thread", text)       # faulthandler's dump: waiting in Event.wait
        self.assertIn("in wait", text)
        self.assertFalse(alive(pid))

    def test_a_failure_fails_the_launch_and_stops_the_others(self):
        status, text, pid = self.launch("fail", "hang", 1.0)
        self.assertEqual(status, 3, text)
        self.assertIn("exited with 3: stopping the others", text)
        self.assertNotIn("still leaving", text)
        self.assertFalse(alive(pid))               # SIGTERM ended the one blocked for ever


if __name__ == "__main__":
    unittest.main()
