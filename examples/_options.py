"""Command-line options shared by the examples: ``--plot`` and the check that matplotlib is installed, the optional
link count and simulated time of the chain examples, and pyplot for the figures."""

import argparse
import importlib.util
import sys

INSTALL_PLOT = 'pip install matplotlib (or pip install "recursive-mbd[plot]"; in a clone: pip install -e ".[plot]")'


def parser(doc, plot=None):
    """An ArgumentParser described by the first paragraph of ``doc`` (whole: a summary may run over several lines),
    the rest of ``doc`` as its epilog; with ``plot`` ("FILE" or "DIR"), a --plot option."""
    summary, _, rest = doc.strip().partition("\n\n")
    result = argparse.ArgumentParser(description=summary, epilog=rest.strip() or None,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if plot == "FILE":
        result.add_argument("--plot", metavar="FILE", help="save a figure to FILE (.png, .pdf, ...; needs matplotlib)")
    elif plot == "DIR":
        result.add_argument("--plot", metavar="DIR", help="write PNG figures into DIR (needs matplotlib)")
    return result


def links_and_time(doc, links, t_end, time_help="simulated time [s]"):
    """(n, t_end) from the command line of an example on an n-link chain: the optional arguments n (default
    ``links``) and t_end (default ``t_end``, described by ``time_help``)."""
    arg_parser = parser(doc)
    arg_parser.add_argument("n", type=int, nargs="?", default=links, help=f"links (default {links})")
    arg_parser.add_argument("t_end", type=float, nargs="?", default=t_end, help=f"{time_help} (default {t_end:g})")
    args = parse(arg_parser)
    return args.n, args.t_end


def parse(arg_parser, argv=None):
    """Parse the command line; with --plot, stop at once (exit 1, how to install) if matplotlib is missing, so
    that nothing is simulated for a figure that cannot be drawn."""
    args = arg_parser.parse_args(argv)
    if getattr(args, "plot", None) and importlib.util.find_spec("matplotlib") is None:
        print(f"{arg_parser.prog}: error: --plot needs matplotlib, which is not installed: {INSTALL_PLOT}",
              file=sys.stderr)
        sys.exit(1)
    return args


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend, imported when a figure is asked for (matplotlib is the
    optional extra "plot"; parse has checked that it is installed)."""
    import matplotlib  # noqa: PLC0415 - optional extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt
