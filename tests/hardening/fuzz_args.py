"""The command line the redsim fuzz scripts share: REDSIM SOURCE_DIR [--count N] [--seed S]
[--timeout-s T], plus a script's own options."""
import argparse


def fuzz_arguments(count, seed, extra=()):
    """Parsed arguments; `extra` holds (flag, add_argument keywords) pairs of the script's own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("redsim", help="the redsim binary")
    ap.add_argument("src", help="the source tree (configs/, tests/data/)")
    ap.add_argument("--count", type=int, default=count, help="inputs to try")
    ap.add_argument("--seed", type=int, default=seed, help="the inputs follow from it")
    ap.add_argument("--timeout-s", type=float, default=300, help="a run that takes longer hangs")
    for flag, kwargs in extra:
        ap.add_argument(flag, **kwargs)
    return ap.parse_args()
