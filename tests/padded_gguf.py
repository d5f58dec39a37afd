"""Derive a GGUF whose vocabulary is padded, as the Qwen2.5 7B GGUF is against the 0.5B (152,064 rows
against 151,936): ``[PAD<id>]`` tokens of type unused appended to the token list, and zero rows appended
to the embedding and output matrices. Written with the ``gguf`` package (the same copy loop as its
``gguf_new_metadata`` script). A quantized row of zero bytes has scale 0, so it dequantizes to zeros.
No tests here: tests/engine/test_qwen_padded.py uses it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

UNUSED = 5  # gguf TokenType.UNUSED, the type llama.cpp's converter gives [PAD<id>] tokens
VOCAB_TENSORS = ("token_embd.weight", "output.weight")


def pad_vocabulary(src: Path, dst: Path, n_pad: int) -> Path:
    import gguf  # test-only dependency

    reader = gguf.GGUFReader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(str(dst), arch=arch, endianess=reader.endianess)
    n_vocab = len(reader.fields[gguf.Keys.Tokenizer.LIST].data)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == gguf.Keys.Tokenizer.LIST:
            value = list(value) + [f"[PAD{n_vocab + i}]" for i in range(n_pad)]
        elif field.name == gguf.Keys.Tokenizer.TOKEN_TYPE:
            value = list(value) + [UNUSED] * n_pad
        elif field.name == gguf.Keys.Tokenizer.SCORES:
            value = list(value) + [0.0] * n_pad
        elif field.name == gguf.Keys.General.NAME:
            value = f"{value} (vocabulary padded by {n_pad})"
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    datas = []
    for t in reader.tensors:
        data = t.data
        if t.name in VOCAB_TENSORS:
            assert data.shape[0] == n_vocab, (t.name, data.shape)
            data = np.concatenate([data, np.zeros((n_pad, *data.shape[1:]), dtype=data.dtype)])
        datas.append(data)
        writer.add_tensor_info(t.name, data.shape, data.dtype, data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in datas:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
    return dst
