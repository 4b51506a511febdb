#!/usr/bin/env python3
"""Writes tests/fixtures/torch/: byte-exact imitations of torch.save archives,
made with the standard library only (no torch here), plus hostile ones.

torch.save pickles (protocol 2) with a persistent_id for storages, tensors as
torch._utils._rebuild_tensor_v2(...), parameters as _rebuild_parameter(...),
modules as NEWOBJ + BUILD of their __dict__, and stores a zip of
<archive>/data.pkl, <archive>/data/<key> (64-byte aligned), <archive>/version.
Stand-in classes here carry the same module/qualified names, so the pickle
opcodes match what torch writes.

expected.json records, per valid archive, every tensor's dtype, shape,
strides, storage key, offset and values (as fp32) for the C++ tests.

When `import torch` works (the GPU machine), real torch.save files of the same
tensors and modules are also written to tests/fixtures/torch/real/; the tests
then check that both load identically.

It also refreshes the fuzz seeds: fuzz/corpus/torch_archive/ (the archives)
and fuzz/corpus/pickle/ (their data.pkl streams).

Usage: tests/formats/make_torch_fixtures.py
"""
import collections
import copyreg
import io
import json
import os
import pickle
import random
import struct
import sys
import types
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "torch")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so the files are reproducible


# --- values --------------------------------------------------------------
def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f16(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def bf16_bits(x):
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16(x):
    return struct.unpack("<f", struct.pack("<I", bf16_bits(x) << 16))[0]


DTYPES = {  # name: (torch storage class, element bytes, encoder, value rounding)
    "F32": ("FloatStorage", 4, lambda v: struct.pack(f"<{len(v)}f", *v), f32),
    "F16": ("HalfStorage", 2, lambda v: struct.pack(f"<{len(v)}e", *v), f16),
    "BF16": ("BFloat16Storage", 2, lambda v: struct.pack(f"<{len(v)}H", *map(bf16_bits, v)), bf16),
    "F64": ("DoubleStorage", 8, lambda v: struct.pack(f"<{len(v)}d", *v), lambda x: x),
}


# --- stand-ins for torch objects -------------------------------------------
class FakeGlobal:
    """A class or function that the pickle names as module.name."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # save_reduce insists on a callable
        raise RuntimeError("stand-in only")


REBUILD_TENSOR = FakeGlobal("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = FakeGlobal("torch._utils", "_rebuild_parameter")
STORAGE_CLASSES = {dtype: FakeGlobal("torch", spec[0]) for dtype, spec in DTYPES.items()}


class FakeStorage:
    def __init__(self, dtype, values):
        self.dtype = dtype
        self.values = [DTYPES[dtype][3](v) for v in values]
        self.key = None  # assigned in order of first use, as torch does

    def data(self):
        return DTYPES[self.dtype][2](self.values)


class FakeTensor:
    def __init__(self, storage, shape, offset=0, stride=None):
        self.storage, self.shape, self.offset = storage, list(shape), offset
        if stride is None:
            stride, acc = [], 1
            for d in reversed(shape):
                stride.insert(0, acc)
                acc *= d
        self.stride = list(stride)

    def __reduce_ex__(self, proto):
        return (REBUILD_TENSOR, (self.storage, self.offset, tuple(self.shape), tuple(self.stride), False,
                                 collections.OrderedDict()))

    def values(self):
        """Row-major fp32 values, as load_f32 must return them (None if not contiguous)."""
        out = []

        def rec(dim, base):
            if dim == len(self.shape):
                out.append(f32(self.storage.values[base]))
                return
            for i in range(self.shape[dim]):
                rec(dim + 1, base + i * self.stride[dim])

        rec(0, self.offset)
        return out


class FakeParameter:
    def __init__(self, tensor):
        self.tensor = tensor

    def __reduce_ex__(self, proto):
        return (REBUILD_PARAMETER, (self.tensor, True, collections.OrderedDict()))


class FakeInstance:
    """An instance of `cls` pickled like any plain Python object: NEWOBJ + BUILD(__dict__)."""

    def __init__(self, cls, state):
        self._cls, self._state = cls, state

    @property
    def __class__(self):  # save_reduce checks that NEWOBJ's class is the object's class
        return self._cls

    def __reduce_ex__(self, proto):
        return (copyreg.__newobj__, (self._cls,), self._state)


class FakeReduce:
    """Pickles as `func(*args)`: how an exploit asks pickle to call something."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce_ex__(self, proto):
        return (self.func, self.args)


def module(cls_path, params=(), buffers=(), modules=(), non_persistent=(), **attrs):
    modname, _, clsname = cls_path.rpartition(".")
    state = {"training": False, "_parameters": collections.OrderedDict(params),
             "_buffers": collections.OrderedDict(buffers), "_non_persistent_buffers_set": set(non_persistent),
             "_backward_hooks": collections.OrderedDict(), "_forward_hooks": collections.OrderedDict(),
             "_modules": collections.OrderedDict(modules)}
    state.update(attrs)
    return FakeInstance(FakeGlobal(modname, clsname), state)


class TorchLikePickler(pickle._Pickler):
    """The pure-Python pickler, writing stand-ins under their torch names."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages = []

    def save_fake_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[FakeGlobal] = save_fake_global

    def persistent_id(self, obj):
        if not isinstance(obj, FakeStorage):
            return None
        if obj.key is None:
            obj.key = str(len(self.storages))
            self.storages.append(obj)
        return ("storage", STORAGE_CLASSES[obj.dtype], obj.key, "cpu", len(obj.values))


def torch_like_pickle(obj):
    buf = io.BytesIO()
    p = TorchLikePickler(buf)
    p.dump(obj)
    return buf.getvalue(), p.storages


def write_zip(path, archive, pkl, storages):
    """torch.save's zip layout: stored entries, storages aligned to 64 bytes by an 'FB' extra field."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        def add(name, data, align=False):
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=ZIP_DATE)
            if align:
                header_end = zf.fp.tell() + 30 + len(info.filename.encode()) + 4
                pad = -header_end % 64
                info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            zf.writestr(info, data)

        add("data.pkl", pkl)
        add(".format_version", b"1")
        add(".storage_alignment", b"64")
        add("byteorder", b"little")
        for s in storages:
            add(f"data/{s.key}", s.data(), align=True)
        add("version", b"3\n")
        add(".data/serialization_id", b"1234567890123456789012345678901234567890")


def write_archive(filename, archive, obj):
    pkl, storages = torch_like_pickle(obj)
    write_zip(os.path.join(OUT, filename), archive, pkl, storages)


def write_raw_pickle_archive(filename, pkl):
    write_zip(os.path.join(OUT, filename), "archive", pkl, [])


# --- the fixtures ----------------------------------------------------------
rng = random.Random(20261129)


def rand(n):
    return [rng.gauss(0.0, 1.5) for _ in range(n)]


def storage_tensor(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    return FakeTensor(FakeStorage(dtype, rand(n)), shape)


def state_dict_tensors():
    shared = FakeStorage("F32", rand(11))
    base6 = FakeStorage("F32", rand(6))
    return collections.OrderedDict([
        ("embed.weight", storage_tensor("F32", [7, 5])),
        ("norm.weight", storage_tensor("F16", [5])),
        ("proj.weight", storage_tensor("BF16", [3, 5])),
        ("head.weight", storage_tensor("F64", [2, 3])),
        ("shared_a", FakeTensor(shared, [4])),
        ("shared_b", FakeTensor(shared, [2, 3], offset=5)),
        ("transposed", FakeTensor(base6, [3, 2], stride=[1, 3])),
        ("scalar", storage_tensor("F32", [])),
    ])


def svd_llm_tree():
    """{'model': LlamaForCausalLM with SVD-LLM attention/MLP, 'tokenizer': ...} with rank 3, hidden 6, MLP 10."""
    def linear(out, inp, dtype="F32"):
        return module("torch.nn.modules.linear.Linear", params=[("weight", FakeParameter(storage_tensor(dtype, [out, inp]))),
                                                               ("bias", None)], in_features=inp, out_features=out)

    def factored(names, shapes):
        mods = []
        for n, (out, inp) in zip(names, shapes):
            mods += [(f"{n}_u_proj", linear(out, 3)), (f"{n}_v_proj", linear(3, inp))]
        return mods

    rotary = module("transformers.models.llama.modeling_llama.LlamaRotaryEmbedding",
                    buffers=[("inv_freq", storage_tensor("F32", [3]))], non_persistent=["inv_freq"])
    attn = module("component.svd_llama.SVD_LlamaAttention",
                  modules=factored("qkvo", [(6, 6)] * 4) + [("rotary_emb", rotary)], hidden_size=6, num_heads=2)
    mlp = module("component.svd_llama.SVD_LlamaMLP", modules=factored(["gate", "up", "down"], [(10, 6), (10, 6), (6, 10)]))
    norm = lambda: module("transformers.models.llama.modeling_llama.LlamaRMSNorm",
                          params=[("weight", FakeParameter(storage_tensor("F16", [6])))], variance_epsilon=1e-6)
    layer = module("transformers.models.llama.modeling_llama.LlamaDecoderLayer",
                   modules=[("self_attn", attn), ("mlp", mlp), ("input_layernorm", norm()),
                            ("post_attention_layernorm", norm())])
    config = FakeInstance(FakeGlobal("transformers.models.llama.configuration_llama", "LlamaConfig"),
                          {"hidden_size": 6, "num_hidden_layers": 1, "architectures": ["LlamaForCausalLM"]})
    inner = module("transformers.models.llama.modeling_llama.LlamaModel",
                   modules=[("embed_tokens", module("torch.nn.modules.sparse.Embedding",
                                                    params=[("weight", FakeParameter(storage_tensor("F16", [9, 6])))])),
                            ("layers", module("torch.nn.modules.container.ModuleList", modules=[("0", layer)])),
                            ("norm", norm())])
    model = module("transformers.models.llama.modeling_llama.LlamaForCausalLM",
                   modules=[("model", inner), ("lm_head", linear(9, 6, "F16"))], config=config)
    tokenizer = FakeInstance(FakeGlobal("transformers.models.llama.tokenization_llama", "LlamaTokenizer"),
                             {"vocab_file": "tokenizer.model", "add_bos_token": True,
                              "sp_model": FakeInstance(FakeGlobal("sentencepiece", "SentencePieceProcessor"),
                                                       {"serialized_model_proto": b"\x0a\x01x"})})
    return {"model": model, "tokenizer": tokenizer}


def named(obj, prefix=""):
    """name -> FakeTensor, as the C++ reader must name them (module walk skips non-persistent buffers)."""
    out = {}
    if isinstance(obj, FakeParameter):
        obj = obj.tensor
    if isinstance(obj, FakeTensor):
        out[prefix] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(named(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(obj, FakeInstance):
        s = obj._state
        skip = s["_non_persistent_buffers_set"]
        for k, v in list(s["_parameters"].items()) + [(k, v) for k, v in s["_buffers"].items() if k not in skip]:
            if v is not None:
                out.update(named(v, f"{prefix}.{k}" if prefix else k))
        for k, v in s["_modules"].items():
            out.update(named(v, f"{prefix}.{k}" if prefix else k))
    return out


def describe(tensors):
    return {name: {"dtype": t.storage.dtype, "shape": t.shape, "strides": t.stride, "offset": t.offset,
                   "storage_key": t.storage.key,
                   "values": t.values() if t.stride == FakeTensor(t.storage, t.shape).stride else None}
            for name, t in tensors.items()}


def hostile():
    os_system = FakeGlobal("os", "system")
    write_archive("evil_os_system.pt", "archive", FakeReduce(os_system, ("echo pwned > /tmp/flashsvd_pwned",)))
    sd = collections.OrderedDict([("w", storage_tensor("F32", [2])),
                                  ("x", FakeReduce(FakeGlobal("builtins", "eval"), ("__import__('os').system('id')",)))])
    write_archive("evil_eval_in_state_dict.pt", "archive", sd)
    model = module("torch.nn.modules.linear.Linear",
                   params=[("weight", FakeReduce(FakeGlobal("subprocess", "Popen"), (["id"],)))])
    write_archive("evil_popen_parameter.pt", "archive", model)
    # getattr(os, 'system')('id'): calling the result of a REDUCE.
    chain = (b"\x80\x02cbuiltins\ngetattr\ncos\nsystem\nX\x06\x00\x00\x00systemq\x00\x86R"
             b"X\x02\x00\x00\x00id\x85R.")
    write_raw_pickle_archive("evil_reduce_chain.pt", chain)
    write_raw_pickle_archive("memo_out_of_range.pt", b"\x80\x02}q\x00h\x07.")
    write_raw_pickle_archive("deep_marks.pt", b"\x80\x02" + b"(" * 1500 + b"t" * 1500 + b".")
    nested = storage_tensor("F32", [1])
    for i in range(300):
        nested = {"a": nested}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    write_archive("deep_dicts.pt", "archive", nested)
    sys.setrecursionlimit(limit)
    past_end = FakeStorage("F32", rand(8))
    write_archive("storage_offset_past_end.pt", "archive",
                  {"w": FakeTensor(past_end, [4], offset=6)})
    # A storage whose entry is shorter than the pickle declares.
    short = FakeStorage("F32", rand(8))
    pkl, storages = torch_like_pickle({"w": FakeTensor(short, [8])})
    short.values = short.values[:5]
    write_zip(os.path.join(OUT, "storage_size_mismatch.pt"), "archive", pkl, storages)
    # torch < 1.6: a bare pickle stream starting with the magic number.
    with open(os.path.join(OUT, "legacy.pt"), "wb") as f:
        f.write(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2))


def write_fuzz_seeds():
    for kind in ("torch_archive", "pickle"):
        os.makedirs(os.path.join(CORPUS, kind), exist_ok=True)
    for filename in sorted(os.listdir(OUT)):
        if not filename.endswith(".pt"):
            continue
        with open(os.path.join(OUT, filename), "rb") as f:
            data = f.read()
        # Seeds are mutated byte by byte: skip the one that is mostly padding.
        if filename != "deep_marks.pt":
            with open(os.path.join(CORPUS, "torch_archive", filename), "wb") as f:
                f.write(data)
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                pkl = next(n for n in zf.namelist() if n.endswith("/data.pkl"))
                with open(os.path.join(CORPUS, "pickle", filename[:-3] + ".pkl"), "wb") as f:
                    f.write(zf.read(pkl))


# --- real torch, when available ---------------------------------------------
def real_torch(trees):
    import torch

    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
    storages = {}

    def tensor(t):
        if id(t.storage) not in storages:
            storages[id(t.storage)] = torch.tensor(t.storage.values, dtype=torch.float64).to(dtypes[t.storage.dtype])
        base = storages[id(t.storage)]
        return base.as_strided(t.shape, t.stride, t.offset)

    classes = {}

    def real_class(g):
        """nn.Module subclasses named like the original ones (modules registered so pickle can name them)."""
        key = (g.module, g.name)
        if key not in classes:
            if g.module.startswith("torch."):
                mod = sys.modules.get(g.module) or __import__(g.module, fromlist=[g.name])
                classes[key] = getattr(mod, g.name)
            else:
                # pickle imports the module by name, parents first: stand-ins for any that are missing.
                parts = g.module.split(".")
                for i in range(1, len(parts) + 1):
                    name = ".".join(parts[:i])
                    try:
                        __import__(name)
                    except ImportError:
                        sys.modules[name] = types.ModuleType(name)
                mod = sys.modules[g.module]
                base = torch.nn.Module if g.name != "LlamaConfig" and g.name != "LlamaTokenizer" and \
                    g.name != "SentencePieceProcessor" else object
                cls = type(g.name, (base,), {"__module__": g.module})
                setattr(mod, g.name, cls)
                classes[key] = cls
        return classes[key]

    def convert(obj):
        if isinstance(obj, FakeTensor):
            return tensor(obj)
        if isinstance(obj, FakeParameter):
            return torch.nn.Parameter(tensor(obj.tensor))
        if isinstance(obj, FakeInstance):
            cls = real_class(obj._cls)
            inst = cls.__new__(cls)
            inst.__dict__.update({k: convert(v) for k, v in obj._state.items()})
            return inst
        if isinstance(obj, collections.OrderedDict):
            return collections.OrderedDict((k, convert(v)) for k, v in obj.items())
        if isinstance(obj, dict):
            return {k: convert(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [convert(v) for v in obj]
        return obj

    real = os.path.join(OUT, "real")
    os.makedirs(real, exist_ok=True)
    for filename, tree in trees.items():
        torch.save(convert(tree), os.path.join(real, filename))


def main():
    os.makedirs(OUT, exist_ok=True)
    trees = {"state_dict.pt": state_dict_tensors(), "svd_llm_model.pt": svd_llm_tree()}
    sd = trees["state_dict.pt"]
    sd._metadata = collections.OrderedDict([("", {"version": 1})])  # as module.state_dict() sets it
    write_archive("state_dict.pt", "state_dict", sd)
    write_archive("svd_llm_model.pt", "svd_llm_model", trees["svd_llm_model.pt"])
    expected = {"state_dict.pt": describe(named(sd)), "svd_llm_model.pt": describe(named(trees["svd_llm_model.pt"]["model"]))}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, sort_keys=True)
        f.write("\n")
    hostile()
    write_fuzz_seeds()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch not importable: real torch.save files not written")
        return
    real_torch(trees)


if __name__ == "__main__":
    main()
