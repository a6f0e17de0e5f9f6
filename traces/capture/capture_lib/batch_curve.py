"""--batch-sizes: the model timed at several batch sizes per rank, its layer times recorded as the
trace's curve (curve_batch_sizes, layers[].forward_s_by_batch and backward_s_by_batch;
traces/README.md, "Another batch size"). A kernel has a fixed cost, so a small micro-batch is
not proportionally cheaper; the curve lets redsim's --batch-size price one from measurements."""
import copy

from .common import PROG, fail

MAX_BATCH_SIZE = 2**24  # the trace format's limit on batch_size_per_rank
MAX_CURVE_POINTS = 16   # each point is a whole capture


def parse_batch_sizes(text, own):
    """The increasing batch sizes of --batch-sizes with --batch-size (own) among them."""
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        fail("--batch-sizes: expected comma-separated positive integers, got %r" % text)
    bad = [b for b in sizes if b < 1 or b > MAX_BATCH_SIZE]
    if bad:
        fail("--batch-sizes: expected batch sizes from 1 to 2^24, got %d" % bad[0])
    sizes = sorted(set(sizes) | {own})
    if len(sizes) < 2:
        fail("--batch-sizes: expected at least one batch size other than --batch-size (%d)" % own)
    if len(sizes) > MAX_CURVE_POINTS:
        fail("--batch-sizes: expected at most %d batch sizes with --batch-size, got %d" % (MAX_CURVE_POINTS, len(sizes)))
    return sizes


def at_batch(args, batch):
    """The capture's arguments for one other point of the curve: its own batch, no raw file."""
    a = copy.copy(args)
    a.batch_size = batch
    a.batch_sizes = None
    a.raw_out = None
    return a


def measure_curve(args, sizes, measure, stream):
    """{batch: trace} for every batch size but args.batch_size; measure(a) captures one."""
    others = [b for b in sizes if b != args.batch_size]
    traces = {}
    for i, b in enumerate(others):
        print("%s: batch curve: batch %d (%d of %d other batch sizes)" % (PROG, b, i + 1, len(others)),
              file=stream, flush=True)
        traces[b] = measure(at_batch(args, b))
    return traces


def add_curve(trace, sizes, traces, own):
    """Writes the curve into the trace of batch `own` from the other batches' traces."""
    names = [l["name"] for l in trace["layers"]]
    for b, t in traces.items():
        if [l["name"] for l in t["layers"]] != names:
            fail("the model's layers at batch %d are not those at batch %d (a layer that runs only at some batch "
                 "sizes cannot have a curve)" % (b, own))
    trace["curve_batch_sizes"] = sizes
    for i, layer in enumerate(trace["layers"]):
        for key in ("forward_s", "backward_s"):
            layer[key + "_by_batch"] = [layer[key] if b == own else traces[b]["layers"][i][key] for b in sizes]
    totals = ["%d: %.3f ms" % (b, 1e3 * sum(l["forward_s_by_batch"][k] + l["backward_s_by_batch"][k]
                                             for l in trace["layers"])) for k, b in enumerate(sizes)]
    trace["source"] = trace["source"].rstrip(".") + (
        "; layer times also measured at batch sizes %s, one capture each (forward + backward at batch %s)"
        % (", ".join(str(b) for b in sizes if b != own), "; ".join(totals)))
