"""Every check of memsim.engine.checks on every registered policy with a real model's
adapter (memsim.engine.openai_llm) in place of the mock, against the fake OpenAI-compatible
server of tests/openai_fake.py: a policy runs on what a model extracts, classifies,
summarizes and embeds from the text alone. One server and one replay cache serve the module
(recorded replies are shared, as in a real recording)."""

import pytest

from memsim.engine import checks, registry
from memsim.engine.openai_llm import ModelLLM
from tests.openai_fake import FakeOpenAI
from tests.policies.test_conformance import conformance_cases


@pytest.fixture(scope="module")
def model_factory(tmp_path_factory):
    cache = tmp_path_factory.mktemp("llm-cache")
    with FakeOpenAI() as server:
        spec = f"openai:{server.base_url},model=fake,cache={cache}"
        yield lambda seed: ModelLLM(spec, seed=seed)


@pytest.mark.parametrize("spec, check", list(conformance_cases()))
def test_conformance_through_the_model_adapter(spec, check, model_factory):
    check(spec, model_factory)


def test_the_adapter_reaches_every_protocol_method(model_factory):
    """The checks above exercise what they claim: a run of the conformance stream by a
    consolidating policy asks the model for every kind of answer."""
    from memsim.engine.runner import run

    used = set()
    for spec in registry.specs():
        llm = model_factory(0)
        run(spec.make(llm=llm, seed=0), checks.check_stream(spec.capabilities))
        used |= set(llm.usage()["methods"])
        assert sum(llm.faults.values()) == 0, llm.fault_messages[:3]
    assert used == {"extract", "embed", "embed_query", "classify", "summarize", "synthesize"}
