"""Run by ampc.distributed.run in each process mpirun starts: torchrun's per-process variables
(RANK, LOCAL_RANK) from Open MPI's, then the user's script or module as __main__."""
import os
import runpy
import sys


def main():
    os.environ["RANK"] = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
    os.environ["LOCAL_RANK"] = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ["RANK"])
    argv = sys.argv[1:]
    if argv and argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
