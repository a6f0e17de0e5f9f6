"""Timestamps and hooks of the capture: a clock (CUDA events or perf_counter) and the hooks
that stamp every layer's forward and backward and every gradient as it becomes ready."""
import time

from .common import fail, tensors_in

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
