"""Turns the hooked and un-hooked iterations into a redsim trace and the raw measurements."""
import collections
import statistics

from .common import cpu_name, trace_dtype

# Un-hooked steps that spread wider than this around their median get a warning: on a steady
# device they stay within a few per cent; on a shared CPU host five captures ten seconds apart
# spread ±9% (bench/validate/README.md, "The noise floor of one capture against one job").
UNSTEADY_SPREAD = 0.10


def unsteady_warning(step_s):
    """A warning when the measured steps' range exceeds UNSTEADY_SPREAD of their median, else None."""
    if len(step_s) < 2:
        return None
    mid = statistics.median(step_s)
    lo, hi = min(step_s), max(step_s)
    if mid <= 0 or (hi - lo) <= UNSTEADY_SPREAD * mid:
        return None
    return ("the un-hooked steps ranged over %.0f%% of their median (%.1f-%.1f ms): this machine's speed moved "
            "during the capture, and a capture at another moment may differ as much (capture again and compare)"
            % (100.0 * (hi - lo) / mid, lo * 1e3, hi * 1e3))


def alone(args):
    """Whether this capture ran as a process alone. A copy of --processes N, or a rank of a job
    capturing at once (shared_cores), time-slices the cores with the others: its steps spread by
    design, and its times are rescaled to the copies' or the job's afterwards."""
    return not getattr(args, "copy_sync", None) and not getattr(args, "shared_cores", False)


def attribute(iteration, nlayers, owner_of_param):
    """Per-layer forward and backward seconds of one hooked iteration, and gradient-ready times.

    Forward: walk the layers' forward ends in time order; each end is charged the time since the
    previous end (from the start of forward), and the loss (after the last end) goes to the
    layer that ended last. Backward: the same over the backward ends (a layer's output node
    finished, or one of its parameters' gradients was accumulated), from the start of backward;
    whatever runs after the last of them is reported, not charged.
    """
    events = iteration["events"]
    r = {
        "fwd": [0.0] * nlayers,
        "bwd": [0.0] * nlayers,
        "own_fwd": [0.0] * nlayers,
        "own_bwd": [0.0] * nlayers,
        "calls": [0] * nlayers,
        "first_start": {},
        "ready": {},
        "order": [],
    }
    open_fwd = collections.defaultdict(list)
    open_bwd = collections.defaultdict(list)
    fwd_ends = []
    bwd_ends = []
    t_bwd0 = iteration["forward"]
    for kind, i, t in events:
        if kind == "fwd_start":
            r["calls"][i] += 1
            r["first_start"].setdefault(i, t)
            open_fwd[i].append(t)
        elif kind == "fwd_end":
            if open_fwd[i]:
                r["own_fwd"][i] += t - open_fwd[i].pop()
            fwd_ends.append((t, i))
        elif kind == "bwd_start":
            open_bwd[i].append(t)
        elif kind == "bwd_end":
            if open_bwd[i]:
                r["own_bwd"][i] += t - open_bwd[i].pop()
            bwd_ends.append((t, i))
        elif kind == "ready":
            r["ready"][i] = t - t_bwd0
            r["order"].append(i)
            bwd_ends.append((t, owner_of_param[i]))
    prev, last = 0.0, None
    for t, i in sorted(fwd_ends, key=lambda e: e[0]):
        r["fwd"][i] += max(0.0, t - prev)
        prev, last = max(prev, t), i
    if last is not None:
        r["fwd"][last] += max(0.0, t_bwd0 - prev)
    prev = t_bwd0
    for t, i in sorted(bwd_ends, key=lambda e: e[0]):
        r["bwd"][i] += max(0.0, t - prev)
        prev = max(prev, t)
    r["bwd_tail"] = max(0.0, t_bwd0 + iteration["backward"] - prev)
    return r


def _mean(values):
    return statistics.fmean(values) if values else 0.0


def _names(names):
    """The first five names, and "..." when there are more (a warning's list)."""
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def layer_order(per_iter, layers, owner, warnings):
    """Forward execution order of the layers: first forward pre-hook, in the first measured
    iteration; parameter-owning modules that never ran come last."""
    first = per_iter[0]
    ran = sorted(first["first_start"], key=lambda i: first["first_start"][i])
    ran_set = set(ran)
    owning = set(owner.values())
    never = [i for i in range(len(layers)) if i not in ran_set and i in owning]
    if never:
        warnings.append("%d parameter-owning module(s) never ran in forward (%s); listed last with zero times"
                        % (len(never), _names([layers[i][0] for i in never])))
    return ran + never


def observed_order(per_iter, warnings):
    """The most frequent gradient-ready order over the iterations."""
    orders = [tuple(p["order"]) for p in per_iter]
    observed = collections.Counter(orders).most_common(1)[0][0]
    if len(set(orders)) > 1:
        warnings.append("the gradient-ready order differed between iterations; the most frequent one is written")
    return observed


def grad_order(observed, params, warnings):
    """The observed order, then the trainable parameters that got no gradient (reverse order)."""
    trainable_idx = [i for i, (_, p) in enumerate(params) if p.requires_grad]
    seen = set(observed)
    missing = [i for i in reversed(trainable_idx) if i not in seen]
    if missing:
        warnings.append("%d trainable parameter(s) got no gradient (unused in forward): %s; appended to "
                        "grad_ready_order" % (len(missing), _names([params[i][0] for i in missing])))
    return list(observed) + missing


def timings(args, per_iter, hooked, plain, nlayers, warnings):
    """Means over the measured iterations: per layer (as attributed), per phase (hooked and
    un-hooked), and the rescaling of the hooked layer times to the un-hooked totals."""
    t = {}
    for key in ("fwd", "bwd", "own_fwd", "own_bwd"):
        t[key] = [_mean([p[key][i] for p in per_iter]) for i in range(nlayers)]
    for name, its in (("hooked", hooked), ("plain", plain)):
        t[name] = {phase: _mean([it[phase] for it in its]) for phase in ("forward", "backward", "optimizer")}
    t["bwd_tail"] = _mean([p["bwd_tail"] for p in per_iter])
    t["step_s"] = [it["forward"] + it["backward"] + it["optimizer"] for it in plain]
    unsteady = unsteady_warning(t["step_s"]) if alone(args) else None
    if unsteady:
        warnings.append(unsteady)
    h, u = t["hooked"], t["plain"]
    t["fwd_scale"] = t["bwd_scale"] = 1.0
    if not args.no_rescale:
        t["fwd_scale"] = u["forward"] / h["forward"] if h["forward"] > 0 else 1.0
        t["bwd_scale"] = u["backward"] / h["backward"] if h["backward"] > 0 else 1.0
    t["optimizer_s"] = u["optimizer"] if not args.no_rescale else h["optimizer"]
    return t


def device_text(torch, device):
    """The device's name as the trace records it, and what timed it."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device), "CUDA events on the current stream"
    return "CPU %s (%d threads)" % (cpu_name(), torch.get_num_threads()), "time.perf_counter"


def versions_text(torch):
    versions = "torch %s" % torch.__version__
    try:
        import torchvision

        versions += ", torchvision %s" % torchvision.__version__
    except Exception:
        pass
    return versions


def source_text(args, torch, dev_name, timing, rec, t, opt_text, shape, activations, warnings):
    """The trace's "source": how it was captured, what was measured, and the warnings so far."""
    h, u = t["hooked"], t["plain"]
    source = (
        "captured by traces/capture/redsim_capture.py (%s) on %s: %s, batch %d, input %s, %s parameters, "
        "%d warm-up + %d measured iterations, means; timestamps by %s. Layers are leaf modules and "
        "parameter-owning modules in forward execution order (forward pre/post hooks); each layer's "
        "forward and backward time runs from the previous timestamp to its own end (backward ends: "
        "pre/post hooks on the autograd node of the layer's output, and gradient accumulation), so work "
        "outside modules is charged to the next layer to end. grad_ready_order is the observed order, "
        "from %s. Layer times rescaled to un-hooked iterations (forward x%.3f, backward x%.3f)%s. "
        "Optimizer: %s step. Measured per step: forward %.3f ms, backward %.3f ms, optimizer %.3f ms "
        "(un-hooked); with hooks %.3f / %.3f / %.3f ms."
        % (versions_text(torch), dev_name, args.model, args.batch_size, "x".join(str(d) for d in shape), args.dtype,
           args.warmup, args.iters, timing, rec.ready_mechanism or "no trainable parameters", t["fwd_scale"],
           t["bwd_scale"], " (not applied: --no-rescale)" if args.no_rescale else "", opt_text,
           u["forward"] * 1e3, u["backward"] * 1e3, u["optimizer"] * 1e3,
           h["forward"] * 1e3, h["backward"] * 1e3, h["optimizer"] * 1e3))
    if activations is None:
        warnings.append("this PyTorch has no saved-tensors hooks: activation_bytes left out")
    else:
        source += (" activation_bytes: the storages autograd saved in one forward and its loss (saved-tensors "
                   "hooks), each once, for the layer running when first saved; parameters and buffers left out. "
                   "input_bytes: the storages each layer's forward was given in that forward.")
    if warnings:
        source += " Warnings: " + "; ".join(warnings) + "."
    return source


def param_entries(params, layers, owner):
    entries = []
    for name, p in params:
        e = collections.OrderedDict([("name", name), ("numel", p.numel()), ("shape", list(p.shape)),
                                     ("dtype", trace_dtype(p.dtype, "parameter " + name)),
                                     ("layer", layers[owner[id(p)]][0])])
        if not p.requires_grad:
            e["trainable"] = False
        entries.append(e)
    return entries


def trace_doc(args, model_name, source, dev_name, t, layers, order, activations, inputs):
    """The redsim trace (traces/README.md) but for params, grad_ready_order and buffers."""
    trace = collections.OrderedDict()
    trace["format"] = "redsim-trace"
    trace["version"] = 1
    trace["model"] = model_name
    trace["source"] = source
    trace["reference_device"] = dev_name
    trace["batch_size_per_rank"] = args.batch_size
    trace["optimizer_s"] = t["optimizer_s"]
    trace["layers"] = [{"name": layers[i][0], "forward_s": t["fwd"][i] * t["fwd_scale"],
                        "backward_s": t["bwd"][i] * t["bwd_scale"]} for i in order]
    if activations is not None:
        for entry, i in zip(trace["layers"], order):
            entry["activation_bytes"] = activations[i]
    if activations is not None and inputs is not None:
        for entry, i in zip(trace["layers"], order):
            entry["input_bytes"] = inputs[i]
    return trace


def raw_doc(args, torch, model_name, dev_name, timing, rec, shape, t, layers, order, per_iter, observed, params):
    """The raw measurements (--raw-out): both clocks' phases, per-layer own times, ready times."""
    ready_mean = {i: _mean([p["ready"][i] for p in per_iter if i in p["ready"]]) for i in observed}
    raw = collections.OrderedDict()
    raw["format"] = "redsim-capture-raw"
    raw["version"] = 1
    raw["model"] = model_name
    raw["device"] = dev_name
    raw["torch"] = torch.__version__
    raw["batch_size"] = args.batch_size
    raw["input_shape"] = shape
    raw["iterations"] = {"warmup": args.warmup, "measured": args.iters}
    raw["timing"] = timing
    raw["grad_ready_mechanism"] = rec.ready_mechanism
    raw["per_step_s"] = {"unhooked": t["plain"], "hooked": t["hooked"], "backward_after_last_gradient_s": t["bwd_tail"]}
    # Each measured un-hooked iteration's step, so that --processes can take the slowest copy's
    # step iteration by iteration (capture_lib/copies.py).
    raw["per_iteration_step_s"] = t["step_s"]
    raw["scale"] = {"forward": t["fwd_scale"], "backward": t["bwd_scale"]}
    raw["layers"] = [{"name": layers[i][0], "type": type(layers[i][1]).__name__, "calls": per_iter[0]["calls"][i],
                      "forward_s": t["fwd"][i], "backward_s": t["bwd"][i], "own_forward_s": t["own_fwd"][i],
                      "own_backward_s": t["own_bwd"][i]} for i in order]
    # Observed gradient-ready times (hooked clock, mean over iterations), from the start of backward.
    raw["grad_ready"] = [{"name": params[i][0], "ready_s": ready_mean[i]} for i in observed]
    raw["per_iteration_grad_ready"] = [
        [{"name": params[i][0], "ready_s": p["ready"][i]} for i in p["order"]] for p in per_iter
    ]
    return raw


def assemble(args, torch, device, model, params, buffers, layers, owner, hooked, plain, rec, opt_text, shape,
             activations=None, inputs=None):
    """(trace, raw, warnings, un-hooked (forward, backward, optimizer) seconds)."""
    warnings = []
    owner_of_param = [owner[id(p)] for _, p in params]
    per_iter = [attribute(it, len(layers), owner_of_param) for it in hooked]
    order = layer_order(per_iter, layers, owner, warnings)
    observed = observed_order(per_iter, warnings)
    t = timings(args, per_iter, hooked, plain, len(layers), warnings)
    ready_order = grad_order(observed, params, warnings)
    dev_name, timing = device_text(torch, device)
    model_name = args.model_name or args.model
    source = source_text(args, torch, dev_name, timing, rec, t, opt_text, shape, activations, warnings)
    trace = trace_doc(args, model_name, source, dev_name, t, layers, order, activations, inputs)
    trace["params"] = param_entries(params, layers, owner)
    trace["grad_ready_order"] = [params[i][0] for i in ready_order]
    trace["buffers"] = []
    for name, b in buffers:
        if b.numel() == 0:
            warnings.append("buffer %s has no elements; left out" % name)
            continue
        trace["buffers"].append({"name": name, "numel": b.numel(), "dtype": trace_dtype(b.dtype, "buffer " + name)})
    raw = raw_doc(args, torch, model_name, dev_name, timing, rec, shape, t, layers, order, per_iter, observed, params)
    raw["warnings"] = warnings
    u = t["plain"]
    return trace, raw, warnings, (u["forward"], u["backward"], u["optimizer"])
