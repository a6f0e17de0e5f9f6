#!/usr/bin/env python3
"""Capture a redsim model trace from a real PyTorch model (traces/README.md, "Capturing").

    /usr/bin/python3 traces/capture/redsim_capture.py --model resnet18 \
        --input-shape 3,224,224 --batch-size 32 --warmup 2 --iters 5 --out resnet18.json

The model is a torchvision model name (resnet18, vit_b_16, ...) or `module:factory` /
`path/to/file.py:factory` for a user nn.Module built by calling factory() with no arguments.
It is trained for --warmup + --iters steps on random inputs (forward, loss, backward, optimizer
step) while hooks timestamp:

  - every layer's forward (forward pre/post hooks; a layer is a leaf module that runs in
    forward, or any module that owns parameters directly),
  - every layer's backward: a pre-hook and a post-hook on the autograd node that produced the
    layer's output (the layer's backward starts and ends there; the same node a tensor hook or
    register_full_backward_hook would see, without their in-place restrictions),
  - every gradient as it becomes ready: register_post_accumulate_grad_hook (PyTorch >= 2.1),
    otherwise a hook on the parameter's AccumulateGrad node (param.expand_as(param).grad_fn
    .next_functions[0][0], the way DistributedDataParallel's reducer hooks in),
  - the optimizer step (SGD with momentum, or Adam).

On a GPU the timestamps are CUDA events on the current stream; on a CPU, time.perf_counter.
Times are means over the measured iterations. Each layer's time is the time from the previous
timestamp to its own end, so the work outside modules (activations written as functions,
residual adds, the loss) is charged to the layer that ends next and the layer times add up to
the measured forward and backward. Hooks cost time themselves, so every hooked iteration is
followed by one without hooks, and the layer times are rescaled to the un-hooked totals (the raw
file reports both; --no-rescale keeps the hooked times).

Exit status: 0 on success, 2 on bad arguments or when PyTorch cannot be imported.
"""

import argparse
import collections
import importlib
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time

PROG = "redsim_capture"

# torch dtype name -> redsim trace dtype (traces/README.md)
DTYPE_NAMES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int64": "int64",
    "int32": "int32",
    "uint8": "uint8",
    "bool": "bool",
}


class CaptureError(Exception):
    """A problem the user can fix: reported in one line, exit status 2."""


def fail(msg):
    raise CaptureError(msg)


def import_torch():
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        fail(
            "cannot import PyTorch with %s (%s): install Debian's python3-torch and "
            "python3-torchvision (./setup.sh does), or run with a Python that has torch"
            % (sys.executable, e)
        )
    import torch

    return torch


def parse_shape(text):
    tokens = re.split(r"[,x]", text.strip())
    dims = [int(d) for d in tokens if re.fullmatch(r"\s*[0-9]+\s*", d)]
    if len(dims) != len(tokens) or any(d <= 0 for d in dims):
        fail("--input-shape: expected positive integers separated by commas (per sample, e.g. 3,224,224), got %r" % text)
    return dims


def build_model(spec, torch):
    """A torchvision model name, or module:factory / file.py:factory."""
    if ":" in spec:
        mod_name, factory_name = spec.rsplit(":", 1)
        if mod_name.endswith(".py"):
            if not os.path.isfile(mod_name):
                fail("--model: no such file %r" % mod_name)
            module_spec = importlib.util.spec_from_file_location("redsim_user_model", mod_name)
            module = importlib.util.module_from_spec(module_spec)
            sys.path.insert(0, os.path.dirname(os.path.abspath(mod_name)))
            module_spec.loader.exec_module(module)
        else:
            try:
                module = importlib.import_module(mod_name)
            except ImportError as e:
                fail("--model: cannot import module %r (%s)" % (mod_name, e))
        factory = getattr(module, factory_name, None)
        if factory is None or not callable(factory):
            fail("--model: %r has no callable %r" % (mod_name, factory_name))
        model = factory()
        if not isinstance(model, torch.nn.Module):
            fail("--model: %s() returned %s, expected a torch.nn.Module" % (spec, type(model).__name__))
        return model
    try:
        import torchvision
    except Exception as e:
        fail("cannot import torchvision with %s (%s): install Debian's python3-torchvision" % (sys.executable, e))
    models = torchvision.models
    if hasattr(models, "get_model"):  # torchvision >= 0.14
        try:
            return models.get_model(spec, weights=None)
        except ValueError:
            pass
    factory = getattr(models, spec, None)
    if factory is None or not callable(factory) or spec.startswith("_"):
        fail("--model: %r is neither a torchvision model name nor module:factory" % spec)
    try:
        return factory(weights=None)
    except TypeError:
        return factory(pretrained=False)


def trace_dtype(torch_dtype, what):
    name = str(torch_dtype).replace("torch.", "")
    if name not in DTYPE_NAMES:
        fail("%s has dtype %s, which a redsim trace cannot express (one of %s)" % (what, name, ", ".join(DTYPE_NAMES)))
    return DTYPE_NAMES[name]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def tensors_in(obj):
    """Tensors in a module's output (tensor, or nested tuple/list/dict of them)."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_in(o)


class Clock:
    """Timestamps: time.perf_counter on CPU, CUDA events on the current stream on a GPU."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.device = device

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def seconds(self, origin, mark):
        """Seconds from origin to mark (both from mark(), after sync())."""
        if self.cuda:
            return origin.elapsed_time(mark) / 1e3
        return mark - origin


class Recorder:
    """Hooks that timestamp layers and gradients; one list of events per iteration."""

    def __init__(self, torch, model, layers, params, clock):
        self.torch = torch
        self.clock = clock
        self.layers = layers  # [(name, module)]
        self.params = params  # [(name, param)] registration order
        self.enabled = False
        self.events = []  # (kind, index, mark)
        self.handles = []
        self.grad_accs = []  # keeps AccumulateGrad nodes alive (as DDP's reducer does)
        self.ready_mechanism = None
        for pi, (_, p) in enumerate(params):
            if not p.requires_grad:
                continue
            if hasattr(p, "register_post_accumulate_grad_hook"):  # PyTorch >= 2.1
                self.ready_mechanism = "post-accumulate-grad hooks (Tensor.register_post_accumulate_grad_hook)"
                self.grad_accs.append(None)
            else:
                self.ready_mechanism = (
                    "hooks on each parameter's AccumulateGrad node (param.expand_as(param).grad_fn"
                    ".next_functions[0][0].register_hook, as DDP's reducer in PyTorch < 2.1)"
                )
                self.grad_accs.append(p.expand_as(p).grad_fn.next_functions[0][0])

    def install(self):
        """Registers every hook; remove() takes them all away again (un-hooked iterations)."""
        for li, (_, module) in enumerate(self.layers):
            self.handles.append(module.register_forward_pre_hook(self._fwd_pre(li)))
            self.handles.append(module.register_forward_hook(self._fwd_post(li)))
        accs = iter(self.grad_accs)
        for pi, (_, p) in enumerate(self.params):
            if not p.requires_grad:
                continue
            acc = next(accs)
            if acc is None:
                self.handles.append(p.register_post_accumulate_grad_hook(self._ready_tensor(pi)))
            else:
                self.handles.append(acc.register_hook(self._ready_node(pi)))

    def _add(self, kind, index):
        if self.enabled:
            self.events.append((kind, index, self.clock.mark()))

    def _fwd_pre(self, li):
        def hook(module, inputs):
            self._add("fwd_start", li)

        return hook

    def _fwd_post(self, li):
        def hook(module, inputs, output):
            self._add("fwd_end", li)
            if not self.enabled or not self.torch.is_grad_enabled():
                return
            nodes = []
            for t in tensors_in(output):
                if t.requires_grad and t.grad_fn is not None and all(t.grad_fn is not n for n in nodes):
                    nodes.append(t.grad_fn)
            for node in nodes:
                if hasattr(node, "register_prehook"):
                    node.register_prehook(self._bwd_start(li))
                node.register_hook(self._bwd_end(li))

        return hook

    def _bwd_start(self, li):
        def hook(grad_outputs):
            self._add("bwd_start", li)

        return hook

    def _bwd_end(self, li):
        def hook(grad_inputs, grad_outputs):
            self._add("bwd_end", li)

        return hook

    def _ready_tensor(self, pi):
        def hook(param):
            self._add("ready", pi)

        return hook

    def _ready_node(self, pi):
        def hook(grad_inputs, grad_outputs):
            self._add("ready", pi)

        return hook

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []


def find_layers(model):
    """Candidate layers: leaf modules, and modules that own parameters directly."""
    layers = []
    for name, module in model.named_modules():
        leaf = next(module.children(), None) is None
        owns = next(module.parameters(recurse=False), None) is not None
        if leaf or owns:
            layers.append((name if name else "(root)", module))
    return layers


def make_loss(torch, out, kind, targets):
    F = torch.nn.functional
    if isinstance(out, torch.Tensor):
        t = out
    else:
        ts = [x for x in tensors_in(out) if x.is_floating_point()]
        if not ts:
            fail("the model's output holds no floating-point tensor to take a loss of")
        if kind == "ce":
            t = ts[0]
        else:
            return sum(x.float().mean() for x in ts)
    if kind == "ce" or (kind == "auto" and t.dim() == 2 and t.shape[1] > 1):
        return F.cross_entropy(t.float(), targets(t.shape[1]))
    if kind == "sum":
        return t.float().sum()
    return t.float().mean()


def run(args):
    # Arguments first: a typo should not cost a PyTorch import.
    shape = parse_shape(args.input_shape)
    if args.batch_size < 1:
        fail("--batch-size: expected a positive integer, got %d" % args.batch_size)
    if args.warmup < 0 or args.iters < 1:
        fail("--warmup must be >= 0 and --iters >= 1")
    torch = import_torch()
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device:
        try:
            device = torch.device(args.device)
        except RuntimeError as e:
            fail("--device: %s" % e)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        fail("--device %s: CUDA is not available to this PyTorch" % args.device)
    if device.type not in ("cpu", "cuda"):
        fail("--device: expected cpu, cuda or cuda:N, got %r" % args.device)
    param_dtype = getattr(torch, args.dtype)

    model = build_model(args.model, torch)
    model = model.to(device=device, dtype=param_dtype)
    model.train()
    params = list(model.named_parameters())
    if not params:
        fail("the model has no parameters")
    for name, p in params:
        if p.numel() == 0:
            fail("parameter %s has no elements" % name)
    buffers = list(model.named_buffers())
    layers = find_layers(model)
    layer_of_module = {id(m): i for i, (_, m) in enumerate(layers)}
    owner = {}
    for mname, module in model.named_modules():
        for pname, p in module.named_parameters(recurse=False):
            owner.setdefault(id(p), layer_of_module[id(module)])

    in_shape = [args.batch_size] + shape
    if args.input_dtype == "int64":
        x = torch.randint(0, args.vocab, in_shape, device=device)
    else:
        x = torch.randn(in_shape, device=device, dtype=param_dtype)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)

    def targets(classes):
        return torch.randint(0, classes, (args.batch_size,), generator=gen).to(device)

    trainable = [p for _, p in params if p.requires_grad]
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(trainable, lr=1e-3, momentum=0.9)
        opt_text = "SGD(momentum=0.9)"
    else:
        opt = torch.optim.Adam(trainable, lr=1e-4)
        opt_text = "Adam"

    clock = Clock(torch, device)
    rec = Recorder(torch, model, layers, params, clock)

    def step(hooked):
        opt.zero_grad(set_to_none=True)
        rec.events = []
        rec.enabled = hooked
        if hooked:
            rec.install()
        clock.sync()
        t0 = clock.mark()
        out = model(x)
        loss = make_loss(torch, out, args.loss, targets)
        t1 = clock.mark()
        loss.backward()
        t2 = clock.mark()
        rec.enabled = False
        rec.remove()
        opt.step()
        t3 = clock.mark()
        clock.sync()
        s = lambda m: clock.seconds(t0, m)  # noqa: E731
        events = [(kind, i, s(m)) for kind, i, m in rec.events]
        return {"forward": s(t1), "backward": s(t2) - s(t1), "optimizer": s(t3) - s(t2), "events": events}

    try:
        step(False)  # the model must run on this input at all
    except RuntimeError as e:
        fail("the model failed on an input of shape %s: %s" % (list(x.shape), str(e).strip().splitlines()[0]))
    for _ in range(args.warmup):
        step(True)
        step(False)
    # Hooked and un-hooked iterations alternate, so a drift of the machine's speed hits both alike.
    hooked, plain = [], []
    for _ in range(args.iters):
        hooked.append(step(True))
        plain.append(step(False))

    return assemble(args, torch, device, model, params, buffers, layers, owner, hooked, plain, rec, opt_text, shape)


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


def assemble(args, torch, device, model, params, buffers, layers, owner, hooked, plain, rec, opt_text, shape):
    nlayers = len(layers)
    warnings = []
    owner_of_param = [owner[id(p)] for _, p in params]
    per_iter = [attribute(it, nlayers, owner_of_param) for it in hooked]

    # Forward execution order of the layers: first forward pre-hook, in the first measured iteration.
    first = per_iter[0]
    ran = sorted(first["first_start"], key=lambda i: first["first_start"][i])
    ran_set = set(ran)
    owning = set(owner.values())
    never = [i for i in range(nlayers) if i not in ran_set and i in owning]
    if never:
        warnings.append(
            "%d parameter-owning module(s) never ran in forward (%s); listed last with zero times"
            % (len(never), ", ".join(layers[i][0] for i in never[:5]) + (", ..." if len(never) > 5 else ""))
        )
    layer_order = ran + never
    orders = [tuple(p["order"]) for p in per_iter]
    observed = collections.Counter(orders).most_common(1)[0][0]
    if len(set(orders)) > 1:
        warnings.append("the gradient-ready order differed between iterations; the most frequent one is written")

    def mean(values):
        return statistics.fmean(values) if values else 0.0

    fwd_s = [mean([p["fwd"][i] for p in per_iter]) for i in range(nlayers)]
    bwd_s = [mean([p["bwd"][i] for p in per_iter]) for i in range(nlayers)]
    own_fwd_s = [mean([p["own_fwd"][i] for p in per_iter]) for i in range(nlayers)]
    own_bwd_s = [mean([p["own_bwd"][i] for p in per_iter]) for i in range(nlayers)]
    hooked_fwd = mean([it["forward"] for it in hooked])
    hooked_bwd = mean([it["backward"] for it in hooked])
    hooked_opt = mean([it["optimizer"] for it in hooked])
    plain_fwd = mean([it["forward"] for it in plain])
    plain_bwd = mean([it["backward"] for it in plain])
    plain_opt = mean([it["optimizer"] for it in plain])
    bwd_tail = mean([p["bwd_tail"] for p in per_iter])

    fwd_scale = bwd_scale = 1.0
    if not args.no_rescale:
        fwd_scale = plain_fwd / hooked_fwd if hooked_fwd > 0 else 1.0
        bwd_scale = plain_bwd / hooked_bwd if hooked_bwd > 0 else 1.0
    optimizer_s = plain_opt if not args.no_rescale else hooked_opt

    trainable_idx = [i for i, (_, p) in enumerate(params) if p.requires_grad]
    seen = set(observed)
    missing = [i for i in reversed(trainable_idx) if i not in seen]
    if missing:
        warnings.append(
            "%d trainable parameter(s) got no gradient (unused in forward): %s; appended to grad_ready_order"
            % (len(missing), ", ".join(params[i][0] for i in missing[:5]) + (", ..." if len(missing) > 5 else ""))
        )
    grad_order = list(observed) + missing

    if device.type == "cuda":
        dev_name = torch.cuda.get_device_name(device)
        timing = "CUDA events on the current stream"
    else:
        dev_name = "CPU %s (%d threads)" % (cpu_name(), torch.get_num_threads())
        timing = "time.perf_counter"
    model_name = args.model_name or args.model
    versions = "torch %s" % torch.__version__
    try:
        import torchvision

        versions += ", torchvision %s" % torchvision.__version__
    except Exception:
        pass
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
        % (
            versions,
            dev_name,
            args.model,
            args.batch_size,
            "x".join(str(d) for d in shape),
            args.dtype,
            args.warmup,
            args.iters,
            timing,
            rec.ready_mechanism or "no trainable parameters",
            fwd_scale,
            bwd_scale,
            " (not applied: --no-rescale)" if args.no_rescale else "",
            opt_text,
            plain_fwd * 1e3,
            plain_bwd * 1e3,
            plain_opt * 1e3,
            hooked_fwd * 1e3,
            hooked_bwd * 1e3,
            hooked_opt * 1e3,
        )
    )
    if warnings:
        source += " Warnings: " + "; ".join(warnings) + "."

    trace = collections.OrderedDict()
    trace["format"] = "redsim-trace"
    trace["version"] = 1
    trace["model"] = model_name
    trace["source"] = source
    trace["reference_device"] = dev_name
    trace["batch_size_per_rank"] = args.batch_size
    trace["optimizer_s"] = optimizer_s
    trace["layers"] = [
        {"name": layers[i][0], "forward_s": fwd_s[i] * fwd_scale, "backward_s": bwd_s[i] * bwd_scale}
        for i in layer_order
    ]
    trace["params"] = []
    for name, p in params:
        e = collections.OrderedDict(
            [
                ("name", name),
                ("numel", p.numel()),
                ("dtype", trace_dtype(p.dtype, "parameter " + name)),
                ("layer", layers[owner[id(p)]][0]),
            ]
        )
        if not p.requires_grad:
            e["trainable"] = False
        trace["params"].append(e)
    trace["grad_ready_order"] = [params[i][0] for i in grad_order]
    trace["buffers"] = []
    for name, b in buffers:
        if b.numel() == 0:
            warnings.append("buffer %s has no elements; left out" % name)
            continue
        trace["buffers"].append({"name": name, "numel": b.numel(), "dtype": trace_dtype(b.dtype, "buffer " + name)})

    ready_mean = {i: mean([p["ready"][i] for p in per_iter if i in p["ready"]]) for i in observed}
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
    raw["per_step_s"] = {
        "unhooked": {"forward": plain_fwd, "backward": plain_bwd, "optimizer": plain_opt},
        "hooked": {"forward": hooked_fwd, "backward": hooked_bwd, "optimizer": hooked_opt},
        "backward_after_last_gradient_s": bwd_tail,
    }
    raw["scale"] = {"forward": fwd_scale, "backward": bwd_scale}
    raw["layers"] = [
        {
            "name": layers[i][0],
            "type": type(layers[i][1]).__name__,
            "calls": per_iter[0]["calls"][i],
            "forward_s": fwd_s[i],
            "backward_s": bwd_s[i],
            "own_forward_s": own_fwd_s[i],
            "own_backward_s": own_bwd_s[i],
        }
        for i in layer_order
    ]
    # Observed gradient-ready times (hooked clock, mean over iterations), from the start of backward.
    raw["grad_ready"] = [{"name": params[i][0], "ready_s": ready_mean[i]} for i in observed]
    raw["per_iteration_grad_ready"] = [
        [{"name": params[i][0], "ready_s": p["ready"][i]} for i in p["order"]] for p in per_iter
    ]
    raw["warnings"] = warnings
    return trace, raw, warnings, (plain_fwd, plain_bwd, plain_opt)


def write_atomically(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600; an output is as any other file
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Measure a PyTorch model (forward, backward, gradient-ready order and times, optimizer) "
        "and write a redsim model trace (traces/README.md).",
    )
    ap.add_argument("--model", required=True, help="torchvision model name (resnet18, ...) or module:factory / file.py:factory")
    ap.add_argument("--model-name", help="name written as the trace's model (default: --model)")
    ap.add_argument("--input-shape", default="3,224,224", help="shape of one sample, comma-separated (default 3,224,224)")
    ap.add_argument("--batch-size", type=int, default=32, help="samples per step (default 32)")
    ap.add_argument("--input-dtype", choices=["float", "int64"], default="float",
                    help="float: random normal inputs in the parameter dtype; int64: random token ids below --vocab")
    ap.add_argument("--vocab", type=int, default=30522, help="token ids are drawn below this, with --input-dtype int64")
    ap.add_argument("--dtype", choices=["float32", "float16", "bfloat16", "float64"], default="float32",
                    help="parameter dtype (default float32)")
    ap.add_argument("--loss", choices=["auto", "ce", "sum", "mean"], default="auto",
                    help="auto: cross-entropy on random labels for an [N, classes] output, else the mean")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd", help="optimizer whose step is timed (default sgd)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up iterations, not measured (default 2)")
    ap.add_argument("--iters", type=int, default=5, help="measured iterations (default 5), plus as many un-hooked ones")
    ap.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads on CPU (default: PyTorch's choice)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-rescale", action="store_true", help="keep the hooked layer times (do not rescale to un-hooked totals)")
    ap.add_argument("--out", required=True, help="write the redsim trace JSON here")
    ap.add_argument("--raw-out", help="also write the raw measurements (per-layer own times, observed ready times) here")
    args = ap.parse_args(argv)
    try:
        trace, raw, warnings, totals = run(args)
    except CaptureError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    for w in warnings:
        print("%s: warning: %s" % (PROG, w), file=sys.stderr)
    write_atomically(args.out, json.dumps(trace, indent=1) + "\n")
    if args.raw_out:
        write_atomically(args.raw_out, json.dumps(raw, indent=1) + "\n")
    nparams = sum(p["numel"] for p in trace["params"])
    print(
        "%s: %s, %d tensors, %s params, %d layers, %d buffers; per step (batch %d, %s): forward %.3f ms, "
        "backward %.3f ms, optimizer %.3f ms"
        % (
            args.out,
            trace["model"],
            len(trace["params"]),
            format(nparams, ","),
            len(trace["layers"]),
            len(trace["buffers"]),
            args.batch_size,
            trace["reference_device"],
            totals[0] * 1e3,
            totals[1] * 1e3,
            totals[2] * 1e3,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
