"""The measured training steps of the capture, with progress on stderr."""
import sys
import time

from .activations import SavedBytes
from .assemble import assemble
from .common import PROG, build_model, fail, import_torch, parse_shape
from .copies import CopySync
from .hooks import Clock, Recorder, find_layers, make_loss

# At most one layer line per this many seconds: a small model prints step lines only.
LAYER_LINE_INTERVAL_S = 2.0


class Progress:
    """Progress lines on stderr (stdout carries the summary): a large model on a CPU takes
    minutes per step, and a silent capture looks hung. Steps: the trial step, then a hooked and an
    un-hooked one per warm-up and per measured iteration. The ETA is the mean step time so far
    times the steps left (the trial step includes PyTorch's lazy initialisation, so it errs
    long)."""

    def __init__(self, total_steps, nlayers, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.monotonic()
        self.total_steps = total_steps
        self.steps_done = 0
        self.nlayers = nlayers
        self.last_line_s = 0.0

    def say(self, text):
        print("%s: %s" % (PROG, text), file=self.stream, flush=True)

    def elapsed_s(self):
        return time.monotonic() - self.t0

    def layer(self, index, what):
        """Layer index (0-based) of the trial step finished; throttled."""
        now = self.elapsed_s()
        if now - self.last_line_s < LAYER_LINE_INTERVAL_S:
            return
        self.last_line_s = now
        self.say("step 1/%d (%s): layer %d/%d, elapsed %.1f s" % (self.total_steps, what, index + 1, self.nlayers, now))

    def step_done(self, what):
        self.steps_done += 1
        now = self.elapsed_s()
        self.last_line_s = now
        eta = now / self.steps_done * (self.total_steps - self.steps_done)
        self.say("step %d/%d done (%s), %d layers, elapsed %.1f s, ETA %.1f s"
                  % (self.steps_done, self.total_steps, what, self.nlayers, now, eta))


def layer_progress_hooks(layers, progress):
    """Forward hooks reporting layer i/n; only on the trial step, which is not measured, so the
    printing costs no measured time."""
    handles = []
    for i, (_, module) in enumerate(layers):
        handles.append(module.register_forward_hook(lambda m, inp, out, i=i: progress.layer(i, "trial, forward")))
    return handles

def check_args(args):
    """Arguments first: a typo should not cost a PyTorch import. Returns the input shape."""
    shape = parse_shape(args.input_shape)
    if args.batch_size < 1:
        fail("--batch-size: expected a positive integer, got %d" % args.batch_size)
    if args.warmup < 0 or args.iters < 1:
        fail("--warmup must be >= 0 and --iters >= 1")
    return shape


def pick_device(args, torch):
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
    return device


def build(args, torch, device, param_dtype):
    """The model in training mode, its parameters and buffers, its layers, and which layer owns
    each parameter (by id)."""
    model = build_model(args.model, torch)
    model = model.to(device=device, dtype=param_dtype)
    model.train()
    params = list(model.named_parameters())
    if not params:
        fail("the model has no parameters")
    for name, p in params:
        if p.numel() == 0:
            fail("parameter %s has no elements" % name)
    layers = find_layers(model)
    layer_of_module = {id(m): i for i, (_, m) in enumerate(layers)}
    owner = {}
    for _, module in model.named_modules():
        for _, p in module.named_parameters(recurse=False):
            owner.setdefault(id(p), layer_of_module[id(module)])
    return model, params, list(model.named_buffers()), layers, owner


def make_optimizer(args, torch, params):
    trainable = [p for _, p in params if p.requires_grad]
    if args.optimizer == "sgd":
        return torch.optim.SGD(trainable, lr=1e-3, momentum=0.9), "SGD(momentum=0.9)"
    return torch.optim.Adam(trainable, lr=1e-4), "Adam"


def make_step(args, torch, model, x, targets, opt, clock, rec):
    """One training step, hooked or not: its phases' seconds and, hooked, the recorder's events."""

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

    return step


def trial(step, layers, progress, x):
    """The untimed first step, with per-layer progress: the model must run on this input at all."""
    handles = layer_progress_hooks(layers, progress)
    try:
        step(False)
    except RuntimeError as e:
        fail("the model failed on an input of shape %s: %s" % (list(x.shape), str(e).strip().splitlines()[0]))
    finally:
        for h in handles:
            h.remove()
    progress.step_done("trial")


def measure_steps(args, step, progress):
    """Warm-up, then the measured iterations: (hooked, un-hooked) step records."""
    for _ in range(args.warmup):
        step(True)
        progress.step_done("warm-up, hooked")
        step(False)
        progress.step_done("warm-up")
    sync = CopySync(args.copy_sync) if getattr(args, "copy_sync", None) else None
    if sync:
        sync.wait_all("measure")
    # Hooked and un-hooked iterations alternate, so a drift of the machine's speed hits both alike.
    hooked, plain = [], []
    for _ in range(args.iters):
        hooked.append(step(True))
        progress.step_done("measured, hooked")
        plain.append(step(False))
        progress.step_done("measured")
    if sync:
        sync.keep_busy(lambda: step(False))
    return hooked, plain


def run(args):
    shape = check_args(args)
    torch = import_torch()
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args, torch)
    param_dtype = getattr(torch, args.dtype)
    model, params, buffers, layers, owner = build(args, torch, device, param_dtype)

    in_shape = [args.batch_size] + shape
    if args.input_dtype == "int64":
        x = torch.randint(0, args.vocab, in_shape, device=device)
    else:
        x = torch.randn(in_shape, device=device, dtype=param_dtype)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)

    def targets(classes):
        return torch.randint(0, classes, (args.batch_size,), generator=gen).to(device)

    opt, opt_text = make_optimizer(args, torch, params)
    clock = Clock(torch, device)
    rec = Recorder(torch, model, layers, params, clock)
    step = make_step(args, torch, model, x, targets, opt, clock, rec)
    progress = Progress(1 + 2 * (args.warmup + args.iters), len(layers))
    trial(step, layers, progress, x)
    # Once, outside the timed steps: the hooks that count saved tensors would cost time.
    saved = SavedBytes(torch, model, layers)
    activations = saved.measure(lambda: make_loss(torch, model(x), args.loss, targets))
    inputs = saved.inputs if activations is not None else None
    progress.say("%s: %d layers, %d parameter tensors; %d steps (1 trial, %d warm-up and %d measured, each hooked "
                  "and un-hooked) on %s" % (args.model, len(layers), len(params), progress.total_steps, args.warmup,
                                           args.iters, device))
    hooked, plain = measure_steps(args, step, progress)
    return assemble(args, torch, device, model, params, buffers, layers, owner, hooked, plain, rec, opt_text, shape,
                    activations, inputs)
