"""companion._contracts: parameters declared once, checked before the body, defaults pinned to their sources.

The declarations themselves are exercised on every public callable by
``tests/test_bad_inputs.py``; here the mechanism (conversion, rules, results, the
unchecked body), the promise that bodies hold no checks, and the defaults.
"""
from __future__ import annotations

import ast
import inspect
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import pytest
import torch

from tests.support import bad_inputs

from companion import (  # noqa: E402,E501
    _contracts,
    absolute,
    alibi,
    configs,
    layer_plans,
    mrope,
    nope,
    precision,
    relative,
    relative_torch,
    rope,
    scaling,
    sinks,
)
from companion._contracts import (  # noqa: E402
    EvenSize,
    Finite,
    Frequencies,
    Integer,
    Positions,
    Positive,
    Size,
    contract,
    keys_after_queries,
)
from companion.lab import kinds  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "companion"


# --- the mechanism ----------------------------------------------------------------------

@contract(keys_after_queries)
def _sizes(n_queries: Size, n_keys: Size | None = None):
    return n_queries, n_keys


@contract
def _ladder(d: EvenSize, base: Positive = 10000.0, positions: Positions | None = None):
    return d, base, positions


def test_arguments_are_converted_before_the_body_runs():
    d, base, positions = _ladder(np.int64(8), np.float32(2.5), [0, 3, 7])
    assert type(d) is int and type(base) is float and base == 2.5
    assert isinstance(positions, np.ndarray) and positions.dtype == np.int64
    assert _ladder(8, positions=torch.tensor([1, 2]))[2].tolist() == [1, 2]


def test_a_message_names_the_parameter_the_range_and_why():
    with pytest.raises(ValueError) as err:
        _ladder(7)
    assert str(err.value) == "d must be an even integer in 2..4294967296 (components come in pairs), got 7"
    with pytest.raises(ValueError, match=r"^base must be a finite real number > 0, got -1.0$"):
        _ladder(8, -1.0)
    with pytest.raises(ValueError, match=r"^positions must be non-negative integers, got a minimum of -1$"):
        _ladder(8, positions=[0, -1])


def test_none_is_accepted_only_where_the_default_is_none():
    assert _sizes(3) == (3, None)
    with pytest.raises(ValueError, match="n_queries must be an integer in 1..4294967296, got None"):
        _sizes(None)


def test_rules_see_the_converted_arguments_and_name_them():
    assert _sizes(np.int64(2), np.int32(5)) == (2, 5)
    with pytest.raises(ValueError, match=r"n_keys must be >= n_queries \(3\): the queries are the last positions"):
        _sizes(3, 2)


def test_a_checked_function_keeps_its_signature_name_and_docstring():
    """Readers, IDEs and the API pages see the function as written."""
    assert list(inspect.signature(rope.inv_freq).parameters) == ["d", "base"]
    assert rope.inv_freq.__name__ == "inv_freq" and rope.inv_freq.__doc__.startswith("The rotation frequencies")
    assert rope.inv_freq(8, 10000.0).shape == (4,)


def test_a_wrong_call_gets_pythons_own_type_error():
    for call in (lambda: _sizes(), lambda: _sizes(1, 2, 3), lambda: _sizes(1, n_queries=2), lambda: _sizes(1, m=2)):
        with pytest.raises(TypeError, match="_sizes"):
            call()


def test_declarations_are_complete_when_made():
    with pytest.raises(TypeError, match="parameter b has no declared kind"):
        @contract
        def f(a: Size, b):
            return a

    with pytest.raises(TypeError, match="names no parameter"):
        @contract(keys_after_queries)
        def g(n_queries: Size):
            return n_queries


def test_an_overflowing_result_is_blamed_on_the_inputs_declared():
    @contract(result=Finite("x", "scale x down"))
    def square(x: Positive):
        return x ** 2

    assert square(3.0) == 9.0
    with pytest.raises(ValueError, match=r"x must be small enough for a finite result.*scale x down"):
        square(1e200)  # Python's float raises OverflowError, numpy's gives inf: both are refused
    with pytest.raises(ValueError, match="x must be small enough"):
        square(np.float64(1e200))


def test_a_dataclass_is_declared_by_its_fields():
    frequencies = scaling.ScaledRope([1.0, 0.5])
    assert isinstance(frequencies.inv_freq, np.ndarray) and frequencies.attention_factor == 1.0
    with pytest.raises(ValueError, match="inv_freq must be a non-empty 1-D array of frequencies > 0"):
        scaling.ScaledRope([1.0, -0.5])


def test_varargs_are_declared_as_one_tuple():
    @contract
    def alternate(*sources: Annotated[tuple, kinds.Functions("functions f(x)")]):
        return sources

    assert alternate(abs, len) == (abs, len)
    assert alternate.__contract__.varargs[0] == "sources"
    with pytest.raises(ValueError, match=r"^sources must be one or more functions f\(x\), got \[\]$"):
        alternate()
    with pytest.raises(ValueError, match="sources must be one or more functions"):
        alternate(abs, 3)


def test_the_labs_kinds_name_the_parameter_and_what_it_accepts():
    fn = kinds.Function("a function batches(step, generator) -> (x, y)")
    assert fn("batches", len) is len
    with pytest.raises(ValueError, match=r"^batches must be a function batches\(step, generator\) -> \(x, y\), got int$"):
        fn("batches", 3)
    module = torch.nn.Linear(2, 2)
    assert kinds.TorchModule()("model", module) is module
    with pytest.raises(ValueError, match="^model must be a torch.nn.Module, got int$"):
        kinds.TorchModule()("model", 3)
    with pytest.raises(ValueError, match=r"^model must have attention_weights\(tokens\), got Linear$"):
        kinds.TorchModule("attention_weights", "attention_weights(tokens)")("model", module)
    with pytest.raises(ValueError, match="^task must be a Task, got int$"):
        _contracts.InstanceOf(dict, "a Task", error=ValueError)("task", 3)


def test_token_tensors_are_integer_tensors_of_the_declared_shape():
    windows = kinds.TokenTensor(2, "(N, n + 1)", min_last=2, why="n >= 1")
    x = torch.zeros(3, 5, dtype=torch.uint8)
    assert windows("windows", x) is x                      # not copied, dtype kept
    for bad, message in ((torch.zeros(3, 5), "dtype torch.float32"), ([[1, 2]], "list"),
                         (torch.zeros(3, 5, dtype=torch.bool), "dtype torch.bool")):
        with pytest.raises(ValueError, match=rf"^windows must be an integer torch.Tensor of tokens, shape \(N, n \+ 1\), got {message}$"):
            windows("windows", bad)
    with pytest.raises(ValueError, match=r"^windows must have shape \(N, n \+ 1\) and the last >= 2 \(n >= 1\), got \(3, 1\)$"):
        windows("windows", torch.zeros(3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match=r"must have shape \(batch, n\) with every size >= 1, got \(0, 4\)"):
        kinds.TokenTensor(2, "(batch, n)", min_size=1)("tokens", torch.zeros(0, 4, dtype=torch.long))


def test_seeds_samples_edges_and_either():
    seeds = (3, 1)
    assert kinds.Seeds()("seeds", seeds) is seeds      # a tuple stays the tuple it was
    for bad in ((1, 1), (-1,), (1.0,), "01", (True,)):
        with pytest.raises(ValueError, match="^seeds must be a list of distinct integers >= 0"):
            kinds.Seeds()("seeds", bad)
    assert kinds.Sample()("values", [True, 2, 3.5]).tolist() == [1.0, 2.0, 3.5]
    with pytest.raises(ValueError, match="^values must be a non-empty list of finite numbers, got"):
        kinds.Sample()("values", [1.0, float("nan")])
    assert np.isnan(kinds.Sample(finite=False)("values", [1.0, float("nan")])[1])
    with pytest.raises(ValueError, match=r"^values must be a non-empty list of numbers \(one per seed\), got \[1, None\]"):
        kinds.Sample(finite=False)("values", [1, None])
    assert kinds.Edges("offsets")("file_starts", [0, 5, 9]).dtype == np.int64
    for bad in ([1, 5], [0, 5, 5], [], [[0, 1]]):
        with pytest.raises(ValueError, match="^file_starts must be increasing offsets starting at 0"):
            kinds.Edges("offsets")("file_starts", bad)
    with pytest.raises(ValueError, match="blocks must be increasing"):
        kinds.Edges("position edges", least=2)("blocks", [0])
    std = _contracts.Either(_contracts.Real(gt=0), _contracts.OneOf("inverse_sqrt_d"), what="a real > 0 or 'inverse_sqrt_d'")
    assert std("std", 1) == 1.0 and type(std("std", 1)) is float and std("std", "inverse_sqrt_d") == "inverse_sqrt_d"
    with pytest.raises(ValueError, match=r"^std must be a real > 0 or 'inverse_sqrt_d', got -1$"):
        std("std", -1)
    lengths = _contracts.PositiveCounts(single=True)
    assert lengths("lengths", np.int64(4)) == [4] and lengths("lengths", (2, 3)) == [2, 3]
    assert _contracts.PositiveCounts(empty=True)("chunks", ()) == []
    with pytest.raises(ValueError, match="lengths must be a non-empty list"):
        lengths("lengths", [])


def test_the_labs_declarations_check_before_the_body():
    from companion.lab import evals, models, tasks, train
    from companion.lab.settings import ModelConfig

    with pytest.raises(ValueError, match=r"^n_needles must be an integer >= 2 \(multi-key retrieval needs two needles\)"):
        tasks.multi_key_retrieval(2, 64, n_needles=1)
    with pytest.raises(ValueError, match="^length must be at least 12 to hold every needle and the query, got 10$"):
        tasks.no_literal_match_retrieval(2, 10)
    with pytest.raises(ValueError, match=r"^step must be an integer in 0..9, got 10$"):
        train.lr_at(10, 10, 1e-3, 1)
    with pytest.raises(ValueError, match="^callback must be a function callback"):
        train.train(torch.nn.Linear(2, 2), lambda step, g: None, 1, every=1)
    model = models.TinyTransformer(ModelConfig("rope", vocab_size=8, d_model=8, n_heads=2, n_layers=1, context_length=8))
    with pytest.raises(ValueError, match=r"^tokens must lie in 0..7 \(vocab_size\), got 0..9$"):
        model(torch.tensor([[0, 9]]))
    with pytest.raises(ValueError, match="^d_model must be divisible by n_heads"):
        ModelConfig("rope", d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="^rule must be one of 'first', 'last', 'random'"):
        evals.copier_accuracy(tasks.copying(1, 9), "middle")
    assert evals.perplexity_by_length.__contract__.kinds["lengths"].single


def test_kinds_describe_their_ranges():
    assert Integer(0).describe() == "an integer >= 0"
    assert _contracts.Real(gt=0.0, le=1.0, why="a fraction").describe() == \
        "a finite real number in (0.0, 1.0] (a fraction)"


# --- bodies are the math ------------------------------------------------------------------

MATH_MODULES = ["attention", "absolute", "absolute_torch", "relative", "relative_torch", "rope", "rope_torch", "alibi",
                "alibi_torch", "nope", "scaling", "trained_range", "interpolation", "integer_positions", "configs/reading",
                "configs/rope_types", "configs/applied", "configs/catalogue", "precision", "symbolic", "pair_usage"]


def _public_definitions(folder: Path, modules, public_names):
    """``(name, node)`` of each public function of ``modules`` in ``folder``, and of each public
    method (``__init__`` included) of their public classes; ``public_names(module)`` is its ``__all__``."""
    for module in modules:
        tree = ast.parse((folder / f"{module}.py").read_text())
        public = set(public_names(module))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in public:
                yield f"{module}.{node.name}", node
            if isinstance(node, ast.ClassDef) and node.name in public:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_") or item.name == "__init__"):
                        yield f"{module}.{node.name}.{item.name}", item


def _math_definitions():
    import importlib

    return _public_definitions(PACKAGE, MATH_MODULES,
                               lambda module: importlib.import_module("companion." + module.replace("/", ".")).__all__)


def test_no_public_function_checks_its_arguments_in_its_body():
    checking = []
    for name, node in _math_definitions():
        for sub in ast.walk(node):
            if isinstance(sub, ast.Raise) or (isinstance(sub, ast.Call) and "_contracts" in ast.unparse(sub.func)):
                checking.append(f"{name} (line {sub.lineno})")
    assert not checking, f"checks in the bodies of public functions (declare them instead): {checking}"


LAB_MODULES = ["settings", "schemes", "runs", "provenance", "experiments", "evals", "stdlib_corpus", "tasks", "train",
               "models", "stats", "claims", "results", "fingerprint", "kinds", "usage"]
#: Public functions of the lab that raise about the files they read or the state they find, which no
#: declaration made before the call can know: the folders of a run, the files present on this machine,
#: the definitions a module holds, the settings a section has (named by their path in the configuration).
LAB_STATE_CHECKS = {
    "stdlib_corpus.load_corpus": "the training and validation files must exist under the stdlib folder",
    "runs.stage_results": "the arm jobs of the seeds must be finished in the folder",
    "runs.run_all": "the folder must not hold the unfinished jobs of another run",
    "runs.assemble": "the folder must hold every job of the run, computed by this code",
    "runs.record_claims_history": "the folder must hold a finished run's summary.json",
    "runs.record_code_change": "the folder must hold a finished run's summary.json, of other code",
    "results.load_results": "the folder must hold one run's files",
    "fingerprint.source_hashes": "each traced function must be defined at the top of its module",
}


def _lab_definitions():
    import importlib

    return _public_definitions(PACKAGE / "lab", LAB_MODULES,
                               lambda module: importlib.import_module(f"companion.lab.{module}").__all__)


def test_no_public_function_of_the_lab_checks_its_arguments_in_its_body():
    checking = []
    for name, node in _lab_definitions():
        for sub in ast.walk(node):
            if (isinstance(sub, ast.Raise) and name not in LAB_STATE_CHECKS) or \
                    (isinstance(sub, ast.Call) and "_contracts" in ast.unparse(sub.func)):
                checking.append(f"{name} (line {sub.lineno})")
    assert not checking, f"checks in the bodies of the lab's public functions (declare them instead): {checking}"
    defined = {name for name, _ in _lab_definitions()}
    assert set(LAB_STATE_CHECKS) <= defined, "an exemption names a function that is gone"


def test_the_hand_called_checks_are_gone():
    assert not (PACKAGE / "_checks.py").exists()
    users = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if re.search(r"\b_checks\b", p.read_text())]
    assert not users, f"modules that mention companion._checks instead of declaring contracts: {users}"


def test_import_companion_loads_no_submodule_sympy_or_figures():
    code = ("import sys, companion; heavy = [m for m in ('sympy', 'torch', 'companion.figures', 'companion.rope') "
            "if m in sys.modules]; print(heavy); companion.rope; print('companion.rope' in sys.modules, "
            "'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True False"


# --- defaults are part of the contract -----------------------------------------------------

def _defaults():
    for key in bad_inputs.public_callables():
        obj = bad_inputs.resolve(key)
        declared = bad_inputs.contract_of(key)
        signature = inspect.signature(obj.__init__ if isinstance(obj, type) else obj)
        for name, kind in declared.kinds.items():
            default = signature.parameters[name].default
            if default is not inspect.Parameter.empty and not (default is None and name in declared.optional):
                yield key, name, kind, default


@pytest.mark.parametrize("key, name, kind, default", list(_defaults()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_default_is_a_value_of_its_own_kind(key, name, kind, default):
    converted = kind(name, default)
    if isinstance(converted, np.ndarray):
        assert np.array_equal(converted, np.asarray(default)), (key, name)
    else:
        assert converted == default, (key, name)


def _hf_rope_source() -> str:
    from transformers import modeling_rope_utils

    return inspect.getsource(modeling_rope_utils)


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_yarn_betas_and_truncation_are_the_librarys():
    source = _hf_rope_source()
    beta_fast = float(re.search(r'get\("beta_fast"\) or (\d+)', source).group(1))
    beta_slow = float(re.search(r'get\("beta_slow"\) or (\d+)', source).group(1))
    truncate = re.search(r'get\("truncate", (True|False)\)', source).group(1) == "True"
    assert (beta_fast, beta_slow) == (32.0, 1.0)
    for function in (scaling.yarn_correction_range, scaling.yarn_code_ramp, scaling.yarn_code):
        assert (_default(function, "beta_fast"), _default(function, "beta_slow")) == (beta_fast, beta_slow)
        assert _default(function, "truncate") is truncate
    # the paper's ramp: alpha = 1 and beta = 32 turns (Peng et al. 2024, section 3.2), the same numbers
    for function in (scaling.yarn_ramp, scaling.yarn, scaling.yarn_curves):
        assert (_default(function, "alpha"), _default(function, "beta")) == (beta_slow, beta_fast)
    settings = configs.read_config({"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8192,
                                    "rope_scaling": {"rope_type": "yarn", "factor": 2.0}})
    assert (settings.parameters["beta_fast"], settings.parameters["beta_slow"]) == (beta_fast, beta_slow)
    assert settings.parameters["truncate"] is truncate


def test_attention_factors_are_the_librarys_formulas():
    from transformers import modeling_rope_utils as hf

    source = inspect.getsource(hf._compute_yarn_parameters)
    assert "return 0.1 * mscale * math.log(scale) + 1.0" in source
    assert "math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))" in \
        inspect.getsource(hf._compute_longrope_parameters)
    for s in (1.0, 1.5, 8.0, 40.0):
        assert scaling.yarn_attention_factor(s) == 0.1 * math.log(s) + 1.0
        assert scaling.longrope_attention_factor(s, 4096) == math.sqrt(1 + math.log(s) / math.log(4096))


def test_llama4_and_t5_defaults_are_the_librarys():
    from transformers import T5Config
    from transformers.models.llama4.configuration_llama4 import Llama4TextConfig

    assert _default(nope.attention_temperature, "floor_scale") == Llama4TextConfig.floor_scale
    assert _default(nope.attention_temperature, "attn_scale") == Llama4TextConfig.attn_scale
    assert _default(nope.irope_layer_pattern, "nope_every") == Llama4TextConfig.no_rope_layer_interval
    for function in (relative.t5_bucket, relative_torch.T5RelativeBias.__init__):
        assert _default(function, "num_buckets") == T5Config.relative_attention_num_buckets
        assert _default(function, "max_distance") == T5Config.relative_attention_max_distance
    assert _default(relative.t5_bias, "max_distance") == T5Config.relative_attention_max_distance


def test_chapter_11_defaults_are_the_librarys():
    """The layer plans' windows, chunks and bases are what the library's configurations default to.

    Gemma 3's window and global factor follow the released checkpoint, whose config.json is
    package data (Gemma3TextConfig's class default window is 4,096). SmolLM3's base of
    5,000,000 is the released model's after its long-context stage (SmolLM3Config defaults
    to 2,000,000), as chapter 11 says; no file here holds it to check against.
    """
    import warnings

    from transformers import (
        Cohere2Config,
        Gemma2Config,
        Gemma3TextConfig,
        GptOssConfig,
        Llama4TextConfig,
        SmolLM3Config,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gemma2, gemma3, gpt_oss = Gemma2Config(), Gemma3TextConfig(), GptOssConfig()
        llama4, smollm3, cohere2 = Llama4TextConfig(), SmolLM3Config(), Cohere2Config()
    assert _default(layer_plans.gemma2, "window") == gemma2.sliding_window
    assert _default(layer_plans.gemma2, "base") == gemma2.rope_parameters["rope_theta"]
    assert _default(layer_plans.gemma3, "local_base") == gemma3.rope_parameters["sliding_attention"]["rope_theta"]
    assert _default(layer_plans.gemma3, "global_base") == gemma3.rope_parameters["full_attention"]["rope_theta"]
    released = configs.published("Gemma 3 27B, local layers").config["text_config"]
    assert _default(layer_plans.gemma3, "window") == released["sliding_window"]
    assert _default(layer_plans.gemma3, "global_factor") == released["rope_scaling"]["factor"]
    every = _default(layer_plans.gemma3, "every")
    assert [t == "full_attention" for t in gemma3.layer_types[:2 * every]] == \
        [(layer + 1) % every == 0 for layer in range(2 * every)]
    assert _default(layer_plans.gpt_oss, "window") == gpt_oss.sliding_window
    assert _default(layer_plans.gpt_oss, "base") == gpt_oss.rope_parameters["rope_theta"]
    assert _default(layer_plans.llama4, "chunk") == llama4.attention_chunk_size
    assert _default(layer_plans.llama4, "base") == llama4.rope_parameters["rope_theta"]
    assert _default(layer_plans.llama4, "qk_norm") is llama4.use_qk_norm
    assert _default(layer_plans.llama4, "nope_every") == llama4.no_rope_layer_interval
    assert _default(layer_plans.smollm3, "nope_every") == smollm3.no_rope_layer_interval
    assert _default(layer_plans.rnope_swa, "window") == cohere2.sliding_window
    assert _default(layer_plans.rnope_swa, "base") == cohere2.rope_parameters["rope_theta"]
    assert [t == "full_attention" for t in cohere2.layer_types[:8]] == \
        [(layer + 1) % _default(layer_plans.rnope_swa, "every") == 0 for layer in range(8)]


def test_chapter_11_defaults_are_the_papers():
    # StreamingLLM keeps four sink tokens (Xiao et al. 2023, section 4); Qwen2-VL's mrope_section
    assert _default(sinks.streaming_cache, "n_sink") == 4
    assert mrope.QWEN2_VL_SECTIONS == (16, 24, 24) and sum(mrope.QWEN2_VL_SECTIONS) == 64
    assert _default(mrope.axial_inv_freq, "base") == 10000.0


def test_rope_bases_and_lengths_are_the_published_ones():
    from transformers import LlamaConfig

    assert absolute.BASE == absolute.BASE == LlamaConfig().rope_parameters["rope_theta"]
    llama2, llama3 = configs.published("Llama 2 7B").config, configs.published("Llama 3 8B").config
    llama31 = configs.published("Llama 3.1 8B").config["rope_scaling"]
    assert absolute.BASE == configs.read_config(llama2).base  # the file leaves it to LlamaConfig
    assert scaling.LLAMA2_CONTEXT == llama2["max_position_embeddings"]
    assert scaling.LLAMA3_BASE == llama3["rope_theta"]
    assert scaling.CODE_LLAMA_BASE == configs.published("Code Llama 7B").config["rope_theta"]
    assert scaling.LLAMA31_ORIGINAL_CONTEXT == llama31["original_max_position_embeddings"]
    assert (_default(scaling.llama3, "s"), _default(scaling.llama3, "low_freq_factor"),
            _default(scaling.llama3, "high_freq_factor"), _default(scaling.llama3, "L"),
            _default(scaling.llama3, "base")) == (llama31["factor"], llama31["low_freq_factor"],
                                                   llama31["high_freq_factor"],
                                                   llama31["original_max_position_embeddings"],
                                                   configs.published("Llama 3.1 8B").config["rope_theta"])
    for function in (scaling.unscaled, scaling.position_interpolation, scaling.ntk_aware, scaling.yarn,
                     scaling.yarn_code, scaling.longrope, scaling.dynamic_ntk):
        assert _default(function, "base") == absolute.BASE and _default(function, "L") == scaling.LLAMA2_CONTEXT
    assert _default(scaling.base_change, "base") == scaling.CODE_LLAMA_BASE


def test_figure_4_defaults_are_the_llama_2_head():
    llama2 = configs.read_config(configs.published("Llama 2 7B").config)
    from companion import trained_range

    assert (_default(trained_range.extension, "d"), _default(trained_range.extension, "base"),
            _default(trained_range.extension, "L")) == (llama2.head_dim, llama2.base, llama2.max_position_embeddings)


def test_the_probes_model_sizes_are_chapter_5s():
    """Chapter 5 trains the probe with these sizes and quotes its results; a change would change them."""
    probe = {name: p.default for name, p in inspect.signature(nope.position_probe).parameters.items()}
    assert probe == {"causal": True, "n_tokens": 16, "d_model": 16, "vocab_size": 8, "weight_std": 0.02, "bos": True,
                     "n_train": 256, "n_test": 128, "hidden": 64, "steps": 400, "lr": 0.02, "seed": 0}
    layer = {name: p.default for name, p in inspect.signature(nope.nope_layer_outputs).parameters.items()
             if p.default is not inspect.Parameter.empty}
    assert layer == {name: probe[name] for name in layer}


# --- every default and where its value comes from -------------------------------------------

def _all_defaults() -> dict:
    """``{callable: {parameter: default}}`` for every public callable that has a default."""
    found = {}
    for key in bad_inputs.public_callables():
        obj = bad_inputs.resolve(key)
        signature = inspect.signature(obj.__init__ if isinstance(obj, type) else obj)
        defaults = {name: p.default for name, p in signature.parameters.items() if p.default is not p.empty}
        if defaults:
            found[key] = defaults
    return found


_ADJACENT = ["rope.pair_indices", "rope.rotate", "rope.rotation_matrices", "rope.rotate_by_matrices", "rope.to_complex",
             "rope.from_complex", "rope.rotate_complex", "rope.score", "rope.relative_score", "rope.complex_score",
             "rope.self_attention", "rope_torch.RotaryEmbedding", "symbolic.rotation_matrix"]

#: Every default of a public callable, grouped by where its value comes from: ``(id, source,
#: {callable: {parameter: value}})``. The tests above also read the library's own values
#: where it has them; here every default is written down beside its source, and a default
#: that is added or changed fails until its source is named.
DEFAULT_SOURCES = [
    ("vaswani-base", "base 10000: the sinusoid of Vaswani et al. (2017), section 3.5, kept by Transformer-XL "
     "(Dai et al. 2019), RoFormer (Su et al. 2021, eq. 15) and Llama 1 and 2 (LlamaConfig's rope_theta)", {
         **{f"absolute.{name}": {"base": 10000.0} for name in (
             "frequencies", "wavelengths", "sinusoidal", "rotation_for_offset", "position_dot_products",
             "dot_product_at_distance", "position_score")},
         "absolute_torch.SinusoidalPositions": {"base": 10000.0},
         "relative.signed_sinusoid": {"base": 10000.0}, "relative.transformer_xl_terms": {"base": 10000.0},
         "relative_torch.TransformerXLScores": {"base": 10000.0},
         "rope.inv_freq": {"base": 10000.0}, "rope_torch.RotaryEmbedding": {"base": 10000.0},
         "mrope.axial_inv_freq": {"base": 10000.0}, "interpolation.pi_bound_ratio": {"base": 10000.0},
         **{f"scaling.{name}": {"base": 10000.0} for name in (
             "unscaled", "position_interpolation", "ntk_base", "ntk_per_pair", "ntk_aware", "dynamic_ntk", "yarn",
             "yarn_correction_range", "yarn_code_ramp", "yarn_code", "yarn_curves", "longrope", "proportional")},
         "trained_range.extension": {"base": 10000.0},
     }),
    ("llama-2-head", "L 4096 and d 128: Llama 2's training length (max_position_embeddings) and head width "
     "(Touvron et al. 2023), the model that chapter 6 extends and that Chen et al. (2023) bound", {
         **{f"scaling.{name}": {"L": 4096} for name in (
             "unscaled", "position_interpolation", "ntk_aware", "dynamic_ntk", "yarn", "yarn_code", "base_change",
             "longrope")},
         "scaling.yarn_curves": {"d": 128, "L": 4096}, "trained_range.extension": {"d": 128, "L": 4096},
         "interpolation.pi_bound_ratio": {"d": 128},
     }),
    ("figure-6-extension", "s 8: chapter 6's figure extends the Llama 2 head eight times, 4,096 to 32,768 tokens", {
        "scaling.yarn_curves": {"s": 8.0}, "trained_range.extension": {"s": 8.0},
    }),
    ("trained-length", "s 1: the length the model was trained for, where every method leaves RoPE as it is "
     "(Chen et al. 2023's s = L'/L; Hugging Face's factor 1.0)", {
         f"scaling.{name}": {"s": 1.0} for name in (
             "unscaled", "position_interpolation", "ntk_aware", "dynamic_ntk", "yarn", "yarn_code", "base_change",
             "longrope", "proportional")
     }),
    ("llama-3.1", "Llama 3.1's rope_scaling (Dubey et al. 2024; its config.json): factor 8, low_freq_factor 1, "
     "high_freq_factor 4, original_max_position_embeddings 8192, rope_theta 500000", {
         "scaling.llama3": {"s": 8.0, "L": 8192, "base": 500_000.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
         "scaling.llama3_bands": {"L": 8192, "base": 500_000.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
     }),
    ("code-llama", "base 10**6: Code Llama's rope_theta (Roziere et al. 2023)", {
        "scaling.base_change": {"base": 1_000_000.0},
    }),
    ("yarn", "YaRN's ramp from alpha = beta_slow = 1 to beta = beta_fast = 32 turns, rounded outward (Peng et "
     "al. 2024, section 3.2; jquesnelle/yarn and Hugging Face _compute_yarn_parameters); DeepSeek-V2's "
     "yarn_get_mscale with mscale 1", {
         "scaling.yarn_ramp": {"alpha": 1.0, "beta": 32.0}, "scaling.yarn": {"alpha": 1.0, "beta": 32.0},
         "scaling.yarn_curves": {"alpha": 1.0, "beta": 32.0},
         **{f"scaling.{name}": {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True} for name in (
             "yarn_correction_range", "yarn_code_ramp", "yarn_code")},
         "scaling.yarn_mscale": {"mscale": 1.0},
     }),
    ("t5", "T5's bias (Raffel et al. 2020; T5Config): 32 buckets, max_distance 128, bidirectional as in the "
     "encoder", {
         "relative.t5_bucket": {"bidirectional": True, "num_buckets": 32, "max_distance": 128},
         "relative.t5_bias": {"bidirectional": True, "max_distance": 128},
         "relative_torch.T5RelativeBias": {"num_buckets": 32, "max_distance": 128, "bidirectional": True},
     }),
    ("chapter-2-costs", "chapter 2's cost comparison: Shaw's clip 16, T5's 32 buckets, one u and v per layer "
     "(Dai et al. 2019)", {
         "relative.position_cost": {"clip": 16, "num_buckets": 32, "tied_uv": False},
     }),
    ("independent-keys", "random scores draw keys independent of the queries (chapter 3's expectation over "
     "q, k ~ N(0, I)); k = q is the case asked for", {
         "pair_usage.random_scores": {"tied": False},
     }),
    ("chapter-5-probe", "chapter 5's head and probe (section 5.3 lists them): 8 tokens and BOS in 16 dimensions, "
     "weights of standard deviation 0.02, 256 + 128 sequences of 16, a 16-64-1 perceptron, 400 Adam steps at "
     "0.02, seed 0; a causal head", {
         "nope.position_probe": {"causal": True, "n_tokens": 16, "d_model": 16, "vocab_size": 8, "weight_std": 0.02,
                                 "bos": True, "n_train": 256, "n_test": 128, "hidden": 64, "steps": 400,
                                 "lr": 0.02, "seed": 0},
         "nope.nope_layer_outputs": {"d_model": 16, "vocab_size": 8, "weight_std": 0.02, "bos": True, "seed": 0},
         "nope.unmasked_probe_floor": {"bos": True}, "nope.position_signal": {"causal": True},
     }),
    ("llama-4", "Llama 4 (Llama4TextConfig; Meta's llama-models): a NoPE layer every 4, chunks of 8192, "
     "rope_theta 500000, QK-norm with rms_norm_eps 1e-5, temperature floor_scale 8192 and attn_scale 0.1", {
         "nope.irope_layer_pattern": {"nope_every": 4},
         "nope.attention_temperature": {"floor_scale": 8192, "attn_scale": 0.1},
         "layer_plans.llama4": {"nope_every": 4, "chunk": 8192, "base": 500_000.0, "qk_norm": True},
         "layer_plans.qk_rms_norm": {"eps": 1e-5},
     }),
    ("chapter-11-models", "the released configurations of chapter 11 (Gemma2Config, Gemma 3 27B's config.json, "
     "GptOssConfig, SmolLM3 after its long-context stage, Cohere2Config) and StreamingLLM's four sinks (Xiao "
     "et al. 2023, section 4)", {
         "layer_plans.gemma2": {"window": 4096, "base": 10000.0},
         "layer_plans.gemma3": {"every": 6, "window": 1024, "local_base": 10000.0, "global_base": 1_000_000.0,
                                "global_factor": 8.0},
         "layer_plans.gpt_oss": {"window": 128, "base": 150_000.0},
         "layer_plans.smollm3": {"nope_every": 4, "base": 5_000_000.0},
         "layer_plans.rnope_swa": {"every": 4, "window": 4096, "base": 10000.0},
         "sinks.streaming_cache": {"n_sink": 4}, "sinks.streaming_scores": {"n_sink": 4},
         "sinks.streaming_scores_cached": {"n_sink": 4},
     }),
    ("hybrid-models", "the hybrids of recurrent and attention layers: Qwen3-Next-80B-A3B's released config.json "
     "(Qwen3NextConfig: full_attention_interval 4, rope_theta 10**7, partial_rotary_factor 0.25 of a 256-wide head, "
     "64 components) and Kimi Linear's three KDA layers per MLA layer (Kimi Team 2025, arXiv:2510.26692)", {
         "layer_plans.qwen3_next": {"every": 4, "base": 10_000_000.0, "rotary_dim": 64},
         "layer_plans.kimi_linear": {"every": 4},
     }),
    ("attention-layer", "recurrent False: a LayerPlan is one attention layer, as every layer of a Transformer is; "
     "only the hybrids (Qwen3-Next's Gated DeltaNet, Kimi Linear's KDA) mark layers recurrent", {
         "layer_plans.LayerPlan": {"recurrent": False},
     }),
    ("roformer-pairs", "the adjacent pairs (2i, 2i + 1) of RoFormer (Su et al. 2021, eq. 13)", {
        **{key: {"layout": "adjacent"} for key in _ADJACENT},
        "rope.layout_permutation": {"source": "adjacent", "target": "split"},
    }),
    ("library-halves", "the split halves (i, i + d/2) of Hugging Face's rotate_half, which Llama, Qwen2-VL's "
     "M-RoPE, Su's ReRoPE code and StreamingLLM's patch of Llama's attention (mit-han-lab/streaming-llm, "
     "pos_shift/modify_llama.py) rotate", {
         "configs.rotate": {"layout": "split"}, "mrope.rotate": {"layout": "split"},
         "remap.remapped_scores": {"layout": "split"}, "remap.rerope_two_pass": {"layout": "split"},
         "remap.dca_scores": {"layout": "split"}, "remap.rerope_cache": {"layout": "split"},
         "remap.rerope_step": {"layout": "split"},
         "sinks.streaming_scores": {"layout": "split"}, "sinks.streaming_scores_cached": {"layout": "split"},
     }),
    ("deepseek-layouts", "DeepSeek's pair layouts in Transformers: MLA's rotated slice in adjacent pairs "
     "(DeepseekV3Config's rope_interleave True, apply_rotary_pos_emb_interleave), DeepSeek-V4's interleaved RoPE "
     "(modeling_deepseek_v4.apply_rotary_pos_emb), and V3.2's lightning indexer in split halves "
     "(DeepseekV32Indexer: \"NON-interleaved (half-split) RoPE\")", {
         "mla.scores": {"layout": "adjacent"}, "mla.absorbed_scores": {"layout": "adjacent"},
         "mla.attention": {"layout": "adjacent"}, "sparse.unrotate": {"layout": "adjacent"},
         "sparse.indexer_scores": {"layout": "split"},
     }),
    ("qwen2-vl", "Qwen2-VL's M-RoPE (Wang et al. 2024; the get_rope_index released with it and kept in Hugging "
     "Face Transformers 4): sections of pairs per axis, positions from 0, each segment one past the largest "
     "position so far, one temporal step per frame; a merge size of 1 is the plain patch grid", {
         "mrope.pair_axes": {"layout": "sectioned"}, "mrope.text_positions": {"start": 0},
         "mrope.vision_positions": {"start": 0, "spatial_merge_size": 1, "time_interval": 1.0},
         "mrope.multimodal_positions": {"spatial_merge_size": 1, "time_interval": 1.0, "advance": "largest"},
         "mrope.patch_positions": {"spatial_merge_size": 1},
         "video_time.timestamped_segments": {"spatial_merge_size": 1},
         "video_time.videorope_positions": {"spatial_merge_size": 1},
     }),
    ("qwen3-vl", "Qwen3-VL's video processor: temporal patches of 2 frames (Qwen3VLVideoProcessor's "
     "temporal_patch_size, which Qwen3VLProcessor._calculate_timestamps groups the frames by)", {
         "video_time.frame_timestamps": {"temporal_patch_size": 2},
     }),
    ("videorope", "VideoRoPE's adjustable temporal spacing delta 2 (Wei et al. 2025; the released code's "
     "get_t_scale_rope_index with scale_factor 2.0)", {
         "video_time.videorope_positions": {"temporal_spacing": 2},
     }),
    ("unscaled-scores", "an attention factor, query scale or frequency factor of 1: the scores as RoPE and "
     "softmax give them (YaRN's 1/sqrt(t) at s = 1); a plain layer has no QK-norm and no temperature", {
         "rope_torch.RotaryEmbedding": {"attention_factor": 1.0},
         "rope_torch.RotaryEmbedding.set_frequencies": {"attention_factor": 1.0},
         "scaling.ScaledRope": {"attention_factor": 1.0}, "trained_range.Extension.of": {"attention_factor": 1.0},
         "nope.single_key_weight": {"scale": 1.0}, "pair_usage.aimed_scores": {"amplitude": 1.0},
         "layer_plans.LayerPlan": {"factor": 1.0, "qk_norm": False, "temperature": False},
     }),
    ("llama-precision", "Hugging Face's Llama rotary class: angles in float32 (autocast off), cos and sin cast to "
     "the model's dtype, bfloat16 for the released checkpoints", {
         "precision.angles_in": {"dtype": "float32"}, "precision.angle_error": {"dtype": "float32"},
         **{f"precision.{name}": {"angle_dtype": "float32", "table_dtype": "bfloat16"} for name in (
             "table_error", "rotate_like_library", "score_error")},
     }),
    ("alibi", "ALiBi is a causal language model's bias (Press, Smith & Lewis 2022, section 3); chapter 4's "
     "span holds 90% of the weight", {
         "alibi.bias": {"mask_future": True}, "alibi.effective_span": {"share": 0.9},
     }),
    ("not-given", "None: the argument is optional, and its docstring says what leaving it out means (as many "
     "keys as queries, no mask, the default dtype, the configured length...)", {
         "attention.relative_positions": {"n_keys": None}, "attention.causal_mask": {"n_keys": None},
         "attention.scaled_dot_product_attention": {"mask": None, "bias": None},
         "attention.self_attention": {"mask": None, "bias": None},
         "absolute_torch.SinusoidalPositions.forward": {"dtype": None},
         "relative.relative_positions": {"n_keys": None}, "relative.shaw_attention": {"mask": None},
         "relative.t5_bias": {"n_keys": None}, "relative.position_cost": {"n_keys": None},
         "relative_torch.ShawRelativeAttention": {"d_v": None},
         "relative_torch.ShawRelativeAttention.forward": {"mask": None},
         "relative_torch.T5RelativeBias.forward": {"n_keys": None},
         "rope.self_attention": {"mask": None}, "rope_torch.RotaryEmbedding": {"inv_freq": None},
         "rope_torch.RotaryEmbedding.forward": {"positions": None}, "rope_torch.RotaryEmbedding.rotate": {"positions": None},
         "alibi.bias": {"n_keys": None}, "alibi_torch.ALiBi.forward": {"n_keys": None},
         "remap.rerope_two_pass": {"leak": None}, "remap.rerope_cache": {"leak": None},
         "remap.rerope_step": {"leak": None}, "remap.dca_released_settings": {"local_window": None},
         "scaling.dynamic_scale": {"factor": None}, "scaling.dynamic_ntk": {"current_length": None, "hf_factor": None},
         "scaling.longrope": {"current_length": None},
         "interpolation.fit_score_curve": {"rcond": None},
         "configs.read_config": {"layer_type": None}, "configs.frequencies_at": {"layer_type": None},
         "configs.softmax_scale_factor": {"layer_type": None}, "configs.DynamicNTKState": {"layer_type": None},
         "configs.config_extension": {"trained_length": None, "layer_type": None},
         "layer_plans.LayerPlan": {"base": None, "window": None, "chunk": None, "rotary_dim": None},
         "sinks.attention_with_sink": {"mask": None}, "mla.attention": {"mask": None},
         "symbolic.softmax_rows": {"mask": None}, "symbolic.self_attention": {"mask": None},
     }),
    ("the-package's-own", "the package's own choices, each explained in its docstring: softmax over the last "
     "axis, plain least squares, a unit grid of positions, Chen et al.'s bound with the exact constant, offsets "
     "from 1, tolerances for rounding, SymPy witnesses drawn reproducibly, and no text around a video unless "
     "given", {
         "attention.softmax": {"axis": -1},
         "interpolation.fit_score_curve": {"ridge": 0.0}, "interpolation.interpolation_error_bound": {"spacing": 1.0},
         "interpolation.pi_bound_ratio": {"constant": "exact"}, "integer_positions.nearest_return": {"k_min": 1},
         "nope.read_position": {"rtol": 1e-9}, "trained_range.out_of_range": {"tol": 1e-9},
         "symbolic.nonzero_witness": {"seed": 0, "tries": 20, "tolerance": 1e-12},
         "video_time.timestamped_segments": {"before": 0, "after": 0},
     }),
]


def _merged(groups) -> dict:
    merged = {}
    for _, _, table in groups:
        for key, values in table.items():
            assert not set(values) & set(merged.get(key, {})), f"{key}: a default in two groups"
            merged.setdefault(key, {}).update(values)
    return merged


@pytest.mark.parametrize("group, source, table", DEFAULT_SOURCES, ids=[g[0] for g in DEFAULT_SOURCES])
def test_defaults_are_the_values_of_their_sources(group, source, table):
    """Each default in the group ``source`` names (a paper, a library, a released configuration or a
    chapter of the book) has the value written beside it."""
    found = _all_defaults()
    for key, values in table.items():
        assert {name: found.get(key, {}).get(name, "(none)") for name in values} == values, f"{key}: {source}"


def test_every_public_default_has_a_source():
    """No default without a source: the groups above hold every default of every public callable."""
    assert _merged(DEFAULT_SOURCES) == _all_defaults()


def test_qk_norm_epsilon_is_llama_4s():
    from transformers.models.llama4.configuration_llama4 import Llama4TextConfig

    assert _default(layer_plans.qk_rms_norm, "eps") == Llama4TextConfig().rms_norm_eps


def test_the_formats_significant_bits_are_torchs():
    for name, dtype in precision.DTYPES.items():
        assert precision.significant_bits(name) == 1 - round(math.log2(torch.finfo(dtype).eps))


def test_alibi_slope_rule_uses_the_largest_power_of_two():
    for n_heads in range(1, 70):
        p = alibi.largest_power_of_two(n_heads)
        assert p <= n_heads < 2 * p and p & (p - 1) == 0


def test_annotations_of_math_functions_name_their_kinds():
    # the signature a reader sees says what each parameter is (the alias, not Annotated[...])
    assert str(inspect.signature(rope.inv_freq)) == "(d: 'EvenSize', base: 'Positive' = 10000.0) -> 'np.ndarray'"
    assert Annotated[int, Integer(1)].__metadata__[0].describe() == "an integer >= 1"
    assert Frequencies.__metadata__[0].positive is False
