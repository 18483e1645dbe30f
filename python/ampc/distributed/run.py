"""python -m ampc.distributed.run: torchrun for ampc (one node).

    python -m ampc.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ampc.distributed.run --nproc_per_node=2 -m my_package.train

Takes torchrun's flags and gives each process torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID), then
starts the processes with Open MPI's mpirun, which forms the MPI world that ampc.distributed's
backend runs on. Multi-node runs (--nnodes > 1) are not supported: mpirun with a hostfile is the
way there. As torchrun does, OMP_NUM_THREADS defaults to 1 when more than one process runs."""
import argparse
import os
import shutil
import subprocess
import sys


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m ampc.distributed.run", description=__doc__.split("\n")[0])
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc", default="1",
                   help="processes on this node: a number, 'cpu' (one per core) or 'auto'")
    p.add_argument("--nnodes", default="1")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    for name in ("--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id",
                 "--rdzv_id", "--max-restarts", "--max_restarts", "--monitor-interval", "--monitor_interval",
                 "--log-dir", "--log_dir", "--redirects", "--tee", "--local-addr", "--local_addr"):
        p.add_argument(name, default=None, help=argparse.SUPPRESS)
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the target as a program, not through Python")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        p.error(f"--nnodes {args.nnodes}: ampc.distributed.run launches one node; use mpirun with a hostfile "
                f"for several")
    if args.nproc in ("cpu", "auto"):
        args.nproc = os.cpu_count() or 1
    try:
        args.nproc = int(args.nproc)
    except ValueError:
        p.error(f"--nproc-per-node must be a number, 'cpu' or 'auto', got {args.nproc!r}")
    if args.nproc < 1:
        p.error("--nproc-per-node must be at least 1")
    return args


def command(args):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("ampc.distributed.run: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
    target = [args.script] + args.script_args
    if not args.no_python:
        target = [sys.executable, "-m", "ampc.distributed._rank_env"] + (["-m"] if args.module else []) + target
    # --oversubscribe: more processes than cores is allowed (as torchrun allows); as root, Open
    # MPI refuses to start without being told
    return [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(args.nproc)] + target


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    env.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port), GROUP_RANK=str(args.node_rank),
               WORLD_SIZE=str(args.nproc), LOCAL_WORLD_SIZE=str(args.nproc), TORCHELASTIC_RUN_ID="none",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")  # containers forbid CMA; shared memory copies instead
    if args.nproc > 1 and "OMP_NUM_THREADS" not in env:
        print("ampc.distributed.run: setting OMP_NUM_THREADS=1 for each process (set it yourself to change that)",
              file=sys.stderr)
        env["OMP_NUM_THREADS"] = "1"
    return subprocess.call(command(args), env=env)


if __name__ == "__main__":
    sys.exit(main())
