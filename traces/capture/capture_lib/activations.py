"""What autograd saves in one forward for the backward, per layer: the trace's activation_bytes."""


def storage_of(t):
    """(key, bytes) of the storage a saved tensor keeps alive; a view keeps all of its base's."""
    try:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return s.data_ptr(), s.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        # No plain storage (e.g. a sparse or opaque tensor): count the tensor itself.
        return ("tensor", id(t)), t.numel() * t.element_size()


def tensors_in(torch, value):
    """The tensors in a forward's arguments (nested in tuples, lists and dicts)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_in(torch, v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(torch, v)


class SavedBytes:
    """Counts the bytes autograd saves, by layer, while one forward (and its loss) runs.

    Each storage is counted once, for the layer whose forward is running when autograd first saves
    it (the innermost one where layers nest). A tensor saved outside every layer goes to the next
    layer to end its forward, and one saved after the last end (the loss) to the layer that ended
    last, as forward_s charges time. Parameters and buffers are model state, not activations.
    """

    def __init__(self, torch, model, layers):
        self.torch = torch
        self.layers = layers
        self.persistent = {storage_of(t)[0] for t in list(model.parameters()) + list(model.buffers())}
        self.bytes = [0] * len(layers)
        # Bytes of the tensors each layer's forward is given (each storage once per call): what an
        # activation-checkpointed block keeps of its first layer (the trace's input_bytes).
        self.inputs = [0] * len(layers)
        self.seen = set()
        self.open = []
        self.pending = 0
        self.last_end = None

    def _pre(self, li):
        def hook(module, inputs):
            self.open.append(li)
            seen = set()
            for t in tensors_in(self.torch, inputs):
                key, nbytes = storage_of(t)
                if key not in seen:
                    seen.add(key)
                    self.inputs[li] += nbytes

        return hook

    def _post(self, li):
        def hook(module, inputs, output):
            if li in self.open:
                del self.open[len(self.open) - 1 - self.open[::-1].index(li)]
            self.bytes[li] += self.pending
            self.pending = 0
            self.last_end = li

        return hook

    def _pack(self, t):
        key, nbytes = storage_of(t)
        if key in self.persistent or key in self.seen:
            return t
        self.seen.add(key)
        if self.open:
            self.bytes[self.open[-1]] += nbytes
        else:
            self.pending += nbytes
        return t

    def measure(self, forward_and_loss):
        """Runs forward_and_loss() once under the hooks; returns bytes per layer index, or None
        when this PyTorch has no saved-tensors hooks (torch.autograd.graph.saved_tensors_hooks)."""
        graph = getattr(self.torch.autograd, "graph", None)
        if graph is None or not hasattr(graph, "saved_tensors_hooks"):
            return None
        handles = []
        for li, (_, module) in enumerate(self.layers):
            handles.append(module.register_forward_pre_hook(self._pre(li)))
            handles.append(module.register_forward_hook(self._post(li)))
        try:
            with graph.saved_tensors_hooks(self._pack, lambda t: t):
                loss = forward_and_loss()
        finally:
            for h in handles:
                h.remove()
        del loss  # frees the graph and everything it saved
        if self.pending and self.last_end is not None:
            self.bytes[self.last_end] += self.pending
        return self.bytes
