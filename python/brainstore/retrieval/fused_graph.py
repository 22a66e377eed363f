"""The default model rewritten as onnxruntime's fused BERT operators, the graph its int8 copy is made
from (see :func:`brainstore.retrieval.embedder.dynamic_int8_model`).

The shipped all-MiniLM-L6-v2 file is a torch export: each attention block is about thirty small
operators (reshapes, transposes, slices, a NaN guard after the softmax), and neither onnxruntime's
session optimizer nor its transformer optimizer recognises the pattern. A short question then spends
much of its run between operators. The same weights as ``EmbedLayerNormalization``, ``Attention``,
``SkipLayerNormalization`` and ``BiasGelu`` (com.microsoft) make a graph of 47 nodes instead of 261.
Measured on the 2-core machine, 600 LoCoMo questions embedded alternately by both int8 copies: p50
2.63 ms against 3.54 (paired median 0.93 ms less), cosine to the model's own vectors 0.9933 on
average for both (min 0.9890 against 0.9885).

Nothing is trusted on its shape alone: :func:`fused_bert` checks the rewritten graph against the
source on a padded batch before anyone uses it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

__all__ = ["FusedGraphMismatch", "fused_bert"]

# all-MiniLM-L6-v2: 384 hidden units in 12 heads of 32. The weights give the hidden size and the
# layers; the heads are the model's, and the check below fails if they were not.
_HEADS = 12
# Largest difference allowed between the source's and the rewrite's hidden states (float32, values of
# order 1): the rewrite sums in another order, about 2e-6 apart; a wrong wiring is off by whole units.
_TOLERANCE = 1e-3
_LAYER = re.compile(r"encoder\.layer\.(\d+)\.")


class FusedGraphMismatch(RuntimeError):
    """The source graph is not the BERT encoder the rewrite expects, or the rewrite computes
    something else."""


def fused_bert(source: Any, *, check: bool = True) -> Any:
    """``source`` (an ``onnx.ModelProto`` whose weights are constants: the shipped model after
    constant folding) as fused BERT operators; the same inputs and ``last_hidden_state`` output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = {i.name: numpy_helper.to_array(i) for i in source.graph.initializer}
    producer = {out: node for node in source.graph.node for out in node.output}
    prefix = next((name[: -len("embeddings.word_embeddings.weight")] for name in weights
                   if name.endswith("embeddings.word_embeddings.weight")), None)  # fmt: skip
    if prefix is None:
        raise FusedGraphMismatch("no word embeddings among the model's weights")
    layers = 1 + max((int(m.group(1)) for name in weights if (m := _LAYER.search(name))), default=-1)
    epsilon = next(
        (a.f for n in source.graph.node if n.op_type == "LayerNormalization" for a in n.attribute if a.name == "epsilon"),
        1e-12,
    )

    def dense(bias: str) -> tuple[np.ndarray, np.ndarray]:
        """The weight a bias is added to: ``MatMul(x, weight) + bias`` in the source."""
        for node in source.graph.node:
            if node.op_type == "Add" and bias in node.input:
                product = producer.get(next(i for i in node.input if i != bias))
                if product is not None and product.op_type == "MatMul" and product.input[1] in weights:
                    return weights[product.input[1]], weights[bias]
        raise FusedGraphMismatch(f"no MatMul feeds the bias {bias}")

    def weight(name: str) -> np.ndarray:
        if name not in weights:
            raise FusedGraphMismatch(f"the model has no weight {name}")
        return weights[name]

    initializers: list[Any] = []

    def constant(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def microsoft(op: str, inputs: list[str], output: str, **attributes: Any) -> Any:
        return helper.make_node(op, inputs, [output], domain="com.microsoft", **attributes)

    e = prefix + "embeddings."
    nodes = [helper.make_node("Cast", [name], [name + "_32"], to=TensorProto.INT32)
             for name in ("input_ids", "token_type_ids", "attention_mask")]  # fmt: skip
    tables = [
        constant("word", weight(e + "word_embeddings.weight")),
        constant("position", weight(e + "position_embeddings.weight")),
        constant("segment", weight(e + "token_type_embeddings.weight")),
        constant("embedding_gamma", weight(e + "LayerNorm.weight")),
        constant("embedding_beta", weight(e + "LayerNorm.bias")),
    ]
    nodes.append(
        helper.make_node(
            "EmbedLayerNormalization",
            ["input_ids_32", "token_type_ids_32", *tables, "attention_mask_32"],
            ["hidden_0", "mask_index"],
            domain="com.microsoft",
            epsilon=epsilon,
        )
    )
    hidden = "hidden_0"
    for n in range(layers):
        p = f"{prefix}encoder.layer.{n}."
        (wq, bq), (wk, bk), (wv, bv) = (dense(f"{p}attention.self.{part}.bias") for part in ("query", "key", "value"))
        qkv = [constant(f"qkv_weight_{n}", np.concatenate([wq, wk, wv], axis=1)),
               constant(f"qkv_bias_{n}", np.concatenate([bq, bk, bv]))]  # fmt: skip
        wo, bo = dense(p + "attention.output.dense.bias")
        attention_norm = [
            constant(f"attention_gamma_{n}", weight(p + "attention.output.LayerNorm.weight")),
            constant(f"attention_beta_{n}", weight(p + "attention.output.LayerNorm.bias")),
            constant(f"attention_out_bias_{n}", bo),
        ]
        wi, bi = dense(p + "intermediate.dense.bias")
        wf, bf = dense(p + "output.dense.bias")
        output_norm = [
            constant(f"output_gamma_{n}", weight(p + "output.LayerNorm.weight")),
            constant(f"output_beta_{n}", weight(p + "output.LayerNorm.bias")),
            constant(f"output_bias_{n}", bf),
        ]
        attended, following = f"attended_{n}", f"hidden_{n + 1}"
        nodes += [
            microsoft("Attention", [hidden, *qkv, "mask_index"], f"attention_{n}", num_heads=_HEADS),
            helper.make_node("MatMul", [f"attention_{n}", constant(f"attention_out_weight_{n}", wo)], [f"attention_out_{n}"]),
            microsoft("SkipLayerNormalization", [f"attention_out_{n}", hidden, *attention_norm], attended, epsilon=epsilon),
            helper.make_node("MatMul", [attended, constant(f"intermediate_weight_{n}", wi)], [f"intermediate_{n}"]),
            microsoft("BiasGelu", [f"intermediate_{n}", constant(f"intermediate_bias_{n}", bi)], f"gelu_{n}"),
            helper.make_node("MatMul", [f"gelu_{n}", constant(f"output_weight_{n}", wf)], [f"output_{n}"]),
            microsoft("SkipLayerNormalization", [f"output_{n}", attended, *output_norm], following, epsilon=epsilon),
        ]
        hidden = following
    nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "fused-bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, weights[e + "word_embeddings.weight"].shape[1]])],
        initializers,
    )
    fused = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    fused.ir_version = source.ir_version
    onnx.checker.check_model(fused)
    if check:
        _check_same(source, fused)
    return fused


def _check_same(source: Any, fused: Any) -> None:
    """Both graphs on one right-padded batch (a short and a long row, as the embedder pads them)."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    lengths = (5, 40)
    ids = np.zeros((len(lengths), max(lengths)), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = [101, *rng.integers(1000, 29000, length - 2), 102]
        mask[row, :length] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    options = ort.SessionOptions()
    options.log_severity_level = 3
    outputs = []
    for model in (source, fused):
        session = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in session.get_inputs()}
        outputs.append(session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0])
    for row, length in enumerate(lengths):
        gap = float(np.abs(outputs[0][row, :length] - outputs[1][row, :length]).max())
        if not gap <= _TOLERANCE:
            raise FusedGraphMismatch(f"the fused graph differs from the model by {gap} in a row of {length} tokens")
