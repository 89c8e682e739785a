"""Names → meaning: which phase a torch label marks, which category an op or kernel falls in, and
what an op costs in FLOPs and bytes from its recorded input shapes.

In: an op, label or kernel name, and for costs the op's trace `args` (Input Dims, Input type,
Concrete Inputs). Out: a phase name or None, a category string, FLOPs and bytes as floats.

Categories: gemm · elementwise · copy/memory · reduction/norm · sync · data · optimizer · python ·
framework (autograd engine and graph nodes) · communication.
"""
from __future__ import annotations

import functools
import math
import re

USER_PHASE_PREFIX = "profopt.phase."

_GEMM = re.compile(r"(^|::|_)(addmm|addbmm|baddbmm|bmm|mm|matmul|linear|einsum|conv\w*|convolution\w*|"
                   r"\w*scaled_dot_product\w*|\w*attention\w*|mkldnn_convolution|cudnn_convolution\w*)$")
_SYNC = {"aten::item", "aten::_local_scalar_dense", "aten::nonzero", "cudaStreamSynchronize",
         "cudaDeviceSynchronize", "cudaEventSynchronize"}
_COPY = {"copy_", "_to_copy", "to", "clone", "contiguous", "empty", "empty_strided", "empty_like", "zeros",
         "zeros_like", "ones", "ones_like", "full", "full_like", "fill_", "zero_", "cat", "stack",
         "index", "index_select", "index_put_", "index_copy_", "gather", "scatter_", "as_strided", "view",
         "_unsafe_view", "reshape", "select", "slice", "unsqueeze", "squeeze", "transpose", "t", "expand",
         "expand_as", "permute", "detach", "detach_", "alias", "resolve_conj", "resolve_neg", "narrow",
         "split", "chunk", "unbind", "flatten", "unflatten", "set_", "resize_", "embedding", "masked_fill_",
         "new_empty", "new_zeros", "new_ones", "pin_memory", "_pin_memory", "lift_fresh", "arange"}
# Tensor operands of elementwise ops' functional forms: one more recorded tensor is an `out=`.
_ARITY = {**{op: 2 for op in ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "remainder",
                              "fmod", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")},
          **{op: 1 for op in ("relu", "gelu", "silu", "exp", "log", "tanh", "sigmoid", "neg", "abs", "sqrt",
                              "rsqrt", "sin", "cos", "erf", "reciprocal", "clamp", "sign")}}
# Ops that move no data: views and allocations (their bytes are not traffic).
_NO_TRAFFIC = {"as_strided", "view", "_unsafe_view", "reshape", "select", "slice", "unsqueeze", "squeeze",
               "transpose", "t", "expand", "expand_as", "permute", "detach", "detach_", "alias",
               "resolve_conj", "resolve_neg", "narrow", "split", "chunk", "unbind", "flatten", "unflatten",
               "empty", "empty_strided", "empty_like", "new_empty", "set_", "resize_", "lift_fresh",
               "item", "_local_scalar_dense", "size", "stride", "numel", "is_nonzero",
               # casts that are no-ops when nothing changes; when they copy, their copy_ child counts
               "to", "contiguous", "type_as"}
_REDUCTION = re.compile(r"^_?(native_)?(sum|mean|max|min|amax|amin|argmax|argmin|prod|norm|linalg_vector_norm|"
                        r"softmax|log_softmax|layer_norm|batch_norm|group_norm|rms_norm|fused_rms_norm|"
                        r"instance_norm|cross_entropy_loss|cross_entropy|nll_loss|nll_loss2d|topk|sort|"
                        r"cumsum|var|std|var_mean|std_mean|logsumexp|all|any|multinomial|max_pool\w*|"
                        r"avg_pool\w*|adaptive_avg_pool\w*)(_\w+)?$")
_COMM = re.compile(r"nccl|gloo|c10d::|record_param_comms|allreduce|all_reduce|allgather|all_gather|"
                   r"reduce_scatter|broadcast_|alltoall", re.IGNORECASE)

_DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
                "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
                "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::Float8_e4m3fn": 1,
                "c10::Float8_e5m2": 1}


def phase_of(name: str) -> str | None:
    """The phase a label names, or None for an ordinary op."""
    if name.startswith(USER_PHASE_PREFIX):
        return name[len(USER_PHASE_PREFIX):]
    if name.startswith("enumerate(DataLoader)"):
        return "data_loading"
    if name.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
        return "optimizer"
    if name.startswith("autograd::engine::evaluate_function"):
        return "backward"
    return None


def _short(name: str) -> str:
    return name.split("::", 1)[1] if name.startswith("aten::") else name


def is_sync(name: str) -> bool:
    return name in _SYNC


def is_multi_tensor(name: str) -> bool:
    return name.startswith(("aten::_foreach_", "aten::_fused_"))


def is_comm(name: str) -> bool:
    return bool(_COMM.search(name))


@functools.lru_cache(maxsize=4096)
def category(name: str, *, label: bool = False) -> str:
    """Category of a host op (or a label's own self time, which is Python between ops)."""
    if label:
        if name.startswith("enumerate(DataLoader)"):
            return "data"
        if name.startswith("Optimizer."):
            return "optimizer"
        return "python"
    if is_sync(name):
        return "sync"
    if is_comm(name):
        return "communication"
    short = _short(name)
    if is_multi_tensor(name):
        return "optimizer"
    if not name.startswith("aten::"):
        if name.startswith(("autograd::", "torch::autograd")) or name.endswith("Backward0") or \
                name.endswith("Backward1"):
            return "framework"
        if name.startswith(("cuda", "cu")):
            return "framework"
    if _GEMM.search(short):
        return "gemm"
    if short in _COPY:
        return "copy/memory"
    if _REDUCTION.search(short):
        return "reduction/norm"
    return "elementwise"


def kernel_category(name: str) -> str:
    """Category of a GPU kernel from its (mangled or not) name."""
    low = name.lower()
    if "nccl" in low:
        return "communication"
    if low.startswith("memcpy") or low.startswith("memset"):
        return "copy/memory"
    if any(k in low for k in ("gemm", "gemv", "cutlass", "matmul", "conv", "flash", "fmha", "attention",
                              "xmma", "wgmma", "cublas", "implicit_convolve")):
        return "gemm"
    if any(k in low for k in ("reduce", "softmax", "norm", "sum", "argmax", "topk", "sort", "scan")):
        return "reduction/norm"
    if any(k in low for k in ("copy", "cat", "index", "gather", "scatter", "fill")):
        return "copy/memory"
    return "elementwise"


def _tensors(args: dict) -> list[tuple[list[int], int]]:
    dims = args.get("Input Dims") or []
    types = args.get("Input type") or []
    out = []
    for shape, dtype in zip(dims, types, strict=False):  # traces may omit trailing types
        size = _DTYPE_BYTES.get(dtype)
        if size is None or not isinstance(shape, list) or any(not isinstance(d, int) for d in shape):
            continue  # scalars, lists of tensors and unknown types carry no countable traffic
        out.append((shape, size))
    return out


def op_bytes(name: str, args: dict) -> float:
    """Estimated bytes an op moves: its tensor inputs plus one output (largest input; GEMM: m×n).
    An elementwise op's `out=` form records the output among its inputs: counted once, as written."""
    short = _short(name)
    if short in _NO_TRAFFIC or is_sync(name):
        return 0.0
    tensors = _tensors(args)
    if not tensors:
        return 0.0
    sizes = [math.prod(shape) * size for shape, size in tensors]
    if len(tensors) == _ARITY.get(short, 0) + 1 and sizes[-1] == max(sizes):
        return float(sum(sizes))
    out = max(sizes)
    mnk = _gemm_dims(short, [shape for shape, _ in tensors])
    if mnk is not None:
        batch, m, n, _ = mnk
        out = batch * m * n * tensors[0][1]
    return float(sum(sizes) + out)


def _gemm_dims(short: str, shapes: list[list[int]]) -> tuple[int, int, int, int] | None:
    """(batch, m, n, k) for the GEMM ops whose operands are plain in their recorded shapes."""
    try:
        if short == "mm" and len(shapes) >= 2:
            (m, k), (_, n) = shapes[0], shapes[1]
            return 1, m, n, k
        if short == "addmm" and len(shapes) >= 3:
            (m, k), (_, n) = shapes[1], shapes[2]
            return 1, m, n, k
        if short == "bmm" and len(shapes) >= 2:
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return b, m, n, k
        if short == "baddbmm" and len(shapes) >= 3:
            (b, m, k), (_, _, n) = shapes[1], shapes[2]
            return b, m, n, k
    except (ValueError, TypeError):
        return None
    return None


def counts_flops(name: str) -> bool:
    """Ops whose FLOPs `op_flops` knows; count each only where no ancestor also counts."""
    short = _short(name)
    return short in ("mm", "addmm", "bmm", "baddbmm") or "scaled_dot_product" in short or \
        (name.startswith("aten::") and short.lstrip("_").startswith(("conv", "cudnn_conv", "mkldnn_conv"))
         and "transpose" not in short)


def op_flops(name: str, args: dict) -> float:
    """FLOPs from recorded shapes: 2·b·m·n·k for GEMMs, 4·B·H·L·S·D for attention, 2·N·O·out·C/g·k
    for convolutions (×2 for a backward op). 0 when the shapes do not say."""
    short = _short(name)
    shapes = [shape for shape, _ in _tensors(args)]
    try:
        if "scaled_dot_product" in short:
            return _attention_flops(short, shapes)
        if "conv" in short:
            return _conv_flops(short, shapes, args.get("Concrete Inputs") or [])
    except (ValueError, TypeError, IndexError):
        return 0.0
    dims = _gemm_dims(short, shapes)
    if dims is None:
        return 0.0
    b, m, n, k = dims
    return 2.0 * b * m * n * k


def _attention_flops(short: str, shapes: list[list[int]]) -> float:
    backward = "backward" in short
    q, k = (shapes[1], shapes[2]) if backward else (shapes[0], shapes[1])
    if len(q) < 3 or len(k) < 3:
        return 0.0
    batch = math.prod(q[:-2])
    flops = 4.0 * batch * q[-2] * k[-2] * q[-1]
    return 2 * flops if backward else flops


def _ints(text: object) -> list[int] | None:
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return [int(x) for x in text.strip("[]").split(",") if x.strip()]
    except ValueError:
        return None


def _per_dim(concrete: list, index: int, spatial: list[int], default: list[int]) -> list[int]:
    values = _ints(concrete[index]) if len(concrete) > index else None
    if values and len(values) == 1:
        values = values * len(spatial)
    return values if values and len(values) == len(spatial) else default


def _conv_flops(short: str, shapes: list[list[int]], concrete: list) -> float:
    backward = "backward" in short
    if backward:  # (grad_output, input, weight, …): the output's spatial size is in grad_output
        grad_out, inp, weight = shapes[0], shapes[1], shapes[2]
        out_spatial = grad_out[2:]
    else:
        inp, weight = shapes[0], shapes[1]
        spatial, kernel = inp[2:], weight[2:]
        stride = _per_dim(concrete, 3, spatial, [1] * len(spatial))
        padding = _per_dim(concrete, 4, spatial, [k // 2 for k in kernel])  # "same" when unknown
        dilation = _per_dim(concrete, 5, spatial, [1] * len(spatial))
        out_spatial = [(s + 2 * p - d * (k - 1) - 1) // st + 1
                       for s, p, d, k, st in zip(spatial, padding, dilation, kernel, stride, strict=True)]
    if len(inp) < 3 or len(weight) < 3:
        return 0.0
    n, out_channels, in_per_group = inp[0], weight[0], weight[1]
    flops = 2.0 * n * out_channels * math.prod(out_spatial) * in_per_group * math.prod(weight[2:])
    return 2 * flops if backward else flops
