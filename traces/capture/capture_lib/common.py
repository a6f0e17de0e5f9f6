"""Shared pieces of the capture (traces/capture/redsim_capture.py): errors, PyTorch and model
loading, dtypes, atomic writes."""
import importlib
import importlib.util
import os
import platform
import re
import sys
import tempfile

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
