r"""The command line: ``python -m companion.lab``, recompute the lab's results, or run new seeds.

``python -m companion.lab --config full`` recomputes the book's stored results
(:func:`companion.lab.runs.run_all`), ``--config confirmation`` the confirmation run;
``--seeds 17 23`` runs the full configuration at other seeds into a folder of their own
and checks every claim of :mod:`companion.lab.claims` on them: each holds, fails, or
cannot be decided with those seeds, and then says about how many seeds would decide it.
``--workers N`` sets the worker processes, ``--arms`` trains only some arms, ``--part I
--parts P`` runs one of ``P`` parts started by hand and ``--merge`` assembles them
(:func:`companion.lab.runs.assemble`); ``--help`` lists the rest.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import claims, results
from .runs import assemble, record_claims_history, run_all
from .settings import CONFIGS


def main(argv=None) -> int:
    """``python -m companion.lab --config full|reduced [--seeds S ...] [--out DIR]
    [--workers N | --part I --parts P | --merge]``."""
    parser = argparse.ArgumentParser(prog="python -m companion.lab",
                                     description="Recompute the lab's results, or run it at new seeds and check its "
                                                 "claims.")
    parser.add_argument("--config", choices=tuple(CONFIGS), default="reduced")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="run these seeds instead of the configuration's (no sweep), then check the claims on them")
    parser.add_argument("--out", default=None, help="folder for the JSON files (default for 'full' at its own seeds: "
                                                    "the package's stored results; with --seeds: lab_seeds_<seeds>)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, one torch thread each")
    parser.add_argument("--part", type=int, default=None, help="run only every P-th job from the I-th (with --parts)")
    parser.add_argument("--parts", type=int, default=None, help="the number of parts run by hand")
    parser.add_argument("--merge", action="store_true", help="write the result files from the finished jobs")
    parser.add_argument("--record-claims", action="store_true",
                        help="write the claims' history (companion.lab.claims.HISTORY) into summary.json")
    parser.add_argument("--only-seeds", type=int, nargs="+", default=None,
                        help="run only these seeds' jobs now (the run is written once every job is done)")
    parser.add_argument("--sweep", choices=("rest", "all", "none"), default=None,
                        help="which sweep cells to run (default: the rest; none with --seeds)")
    parser.add_argument("--arms", nargs="+", default=None, help="train only these arms of the configuration")
    parser.add_argument("--quiet", action="store_true", help="no line per finished job")
    args = parser.parse_args(argv)
    out = args.out
    if out is None and args.seeds is not None:
        out = "lab_seeds_" + "_".join(map(str, args.seeds))
    if out is None and args.config not in ("full", "confirmation"):
        parser.error("--out is required for a configuration other than 'full' and 'confirmation'")
    if (args.part is None) != (args.parts is None):
        parser.error("--part and --parts go together")
    sweep = args.sweep or ("none" if args.seeds is not None else "rest")
    if args.record_claims:
        print("wrote " + record_claims_history(out))
        return 0
    if args.merge:
        paths = assemble(out)
    else:
        paths = run_all(args.config, out, workers=args.workers, stream=None if args.quiet else sys.stdout,
                        part=args.part, parts=args.parts, seeds=args.seeds, sweep=sweep, only_seeds=args.only_seeds,
                        arms=args.arms)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if "summary" in paths:
        run = results.load_results(Path(paths["summary"]).parent)
        # an undecided verdict says how many seeds would decide it, from the seeds the claim was written from
        print(claims.table(claims.check_all(run.seeds, run.lr_sweep, development=claims.development_records())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
