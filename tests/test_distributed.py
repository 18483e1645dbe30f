"""ampc.distributed (issue 17) on the MPI backend, two processes on this machine started by the
project's launcher (`python -m ampc.distributed.run`, torchrun's flags): every collective, DDP
against single-process training, no_sync, unused parameters, and GradScaler skipping the same
steps on every rank. The scripts in tests/distributed_scripts/ assert, then each rank leaves a file ok.<rank>.
Needs Open MPI's mpirun (make test installs it); without a launcher the multi-process tests skip."""
import os
import shutil
import subprocess
import sys

import pytest
import torch

import ampc
import ampc.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "distributed_scripts")
needs_launcher = pytest.mark.skipif(shutil.which("mpirun") is None, reason="no second-process launcher (mpirun)")


def launch(*args, nproc=2, timeout=300, out_dir=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1")
    if out_dir is not None:
        env["AMPC_DIST_TEST_DIR"] = str(out_dir)
    return subprocess.run([sys.executable, "-m", "ampc.distributed.run", "--nproc-per-node", str(nproc), *args],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def assert_ok(res, out_dir, nproc=2):
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert sorted(os.listdir(out_dir)) == [f"ok.{r}" for r in range(nproc)], out[-4000:]


@needs_launcher
@pytest.mark.parametrize("backend", ["mpi", "gloo"])
def test_collectives_two_processes(backend, tmp_path):
    res = launch(os.path.join(SCRIPTS, "collectives.py"), backend, out_dir=tmp_path)
    assert_ok(res, tmp_path)
    if backend == "gloo":
        assert "runs on MPI" in res.stderr


@needs_launcher
def test_ddp_and_grad_scaler_two_processes(tmp_path):
    assert_ok(launch(os.path.join(SCRIPTS, "ddp_amp.py"), out_dir=tmp_path), tmp_path)


@needs_launcher
def test_launcher_module_mode_env_and_failure(tmp_path):
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "job.py").write_text(
        "import os, sys\n"
        "keys = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'GROUP_RANK', 'MASTER_ADDR', 'MASTER_PORT',"
        " 'TORCHELASTIC_RUN_ID']\n"
        "print('OK', os.environ['RANK'], *[os.environ[k] for k in keys[2:]], *sys.argv[1:], flush=True)\n"
        "sys.exit(3 if os.environ['RANK'] == '1' and '--fail' in sys.argv else 0)\n")
    env_path = str(tmp_path)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_path
    try:
        env = dict(os.environ, PYTHONPATH=env_path + os.pathsep + os.path.join(ROOT, "python"))
        cmd = [sys.executable, "-m", "ampc.distributed.run", "--nproc_per_node=2", "--master-port", "29611", "-m",
               "pkgx.job", "a1"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        lines = sorted(line for line in res.stdout.splitlines() if line.startswith("OK"))
        assert lines == ["OK 0 2 2 0 127.0.0.1 29611 none a1", "OK 1 2 2 0 127.0.0.1 29611 none a1"]
        res = subprocess.run(cmd + ["--fail"], capture_output=True, text=True, timeout=120, env=env)
        assert res.returncode != 0
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_launcher_rejects_several_nodes():
    res = subprocess.run([sys.executable, "-m", "ampc.distributed.run", "--nnodes", "2", "x.py"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert res.returncode == 2 and "--nnodes 2" in res.stderr


@pytest.mark.parametrize("M", [ampc, torch], ids=["ampc", "torch"])
def test_uninitialised_api_like_torch(M):
    d = M.distributed
    assert d.is_available() and not d.is_initialized()
    for fn in (d.get_rank, d.get_world_size):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        d.all_reduce(M.ones(2))
    assert [op.name for op in (d.ReduceOp.SUM, d.ReduceOp.MAX, d.ReduceOp.AVG)] == ["SUM", "MAX", "AVG"]
    assert d.Backend("GLOO") == "gloo"


def test_nccl_is_refused_with_a_reason():
    with pytest.raises(RuntimeError, match="'nccl' backend needs ampc's CUDA build with NCCL"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        ampc.nn.parallel.DistributedDataParallel(ampc.nn.Linear(2, 2))
