"""Memory policies, one module per memory model.

Each policy is declared here as a :class:`~memsim.engine.registry.PolicySpec` and reaches
memsim through the ``memsim.policies`` entry points in ``pyproject.toml`` (entry-point name =
policy id), exactly as a third-party policy would. Declaring a spec imports nothing: the
class named by ``entry_point`` is imported only when the policy is made.
"""

from memsim.engine.registry import PolicySpec

KEEP_ALL = PolicySpec(
    "keep-all",
    1,
    "policies.baselines:KeepAll",
    baseline=True,
    description="baseline: stores every extracted claim, never decays, ranks by cosine",
    capabilities=frozenset({"forget"}),
)
RECENCY = PolicySpec(
    "recency",
    1,
    "policies.baselines:Recency",
    baseline=True,
    description="baseline: cosine x exponential recency, LRU eviction beyond a budget",
    capabilities=frozenset({"forget"}),
)
PAI = PolicySpec(
    "pai",
    3,
    "policies.pai:PersonalAI",
    seed_document="000_ec17278fb0252727.txt",
    description=(
        "Personal AI: fixed half-life decay, reinforce/contradict bands, multi-factor recall"
    ),
    claims="policies.pai_claims",
    capabilities=frozenset({"forget"}),
)
IZZIE = PolicySpec(
    "izzie",
    2,
    "policies.izzie:Izzie",
    seed_document="003_29547c4578628b7b.txt",
    description="Izzie: per-category exponential decay, relevance x strength",
    claims="policies.izzie_claims",
    capabilities=frozenset({"forget"}),
)
KERNLE = PolicySpec(
    "kernle",
    2,
    "policies.kernle:Kernle",
    seed_document="004_e8e020057e4a0858.txt",
    description="Kernle: hyperbolic salience, protection, tombstoning forgetting cycle",
    claims="policies.kernle_claims",
    capabilities=frozenset({"forget", "protect", "recover"}),
)
ENGRAM = PolicySpec(
    "engram",
    3,
    "policies.engram:Engram",
    seed_document="001_aacff6f19feabb69.txt",
    description="Engram: Beta-Bernoulli beliefs from cold consolidation, spaced-repetition "
    "retrieval strength",
    claims="policies.engram_claims",
    capabilities=frozenset({"forget"}),
)
COSMO = PolicySpec(
    "cosmo",
    4,
    "policies.cosmo:Cosmo",
    seed_document="002_79c73a48129ece5d.txt",
    description="Cosmo: salience decay with recall frequency and spacing effect, "
    "candidate/active/core/archived",
    claims="policies.cosmo_claims",
    capabilities=frozenset({"forget"}),
)

# -- reference memory models beside the seeds: published models, no seed document
ACTR = PolicySpec(
    "actr",
    2,
    "policies.actr:ACTR",
    seed_document="",
    description="reference: ACT-R base-level activation (Anderson & Schooler 1991; Pavlik & "
    "Anderson 2005 spacing variant), logistic recall probability",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
)
FSRS = PolicySpec(
    "fsrs",
    2,
    "policies.fsrs6:FSRS",
    seed_document="",
    description="reference: FSRS-6 (fsrs package 6.3.2 default parameters), every review Good",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
)
EBISU = PolicySpec(
    "ebisu",
    2,
    "policies.ebisu_model:Ebisu",
    seed_document="",
    description="reference: Ebisu 2 (ebisu package 2.2.0), Beta prior on recall at a "
    "half-life, every review a successful quiz",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
)
MEMORYBANK = PolicySpec(
    "memorybank",
    4,
    "policies.memorybank:MemoryBank",
    seed_document="",
    description="reference: MemoryBank (Zhong et al. AAAI 2024), Ebbinghaus R = exp(-t/S), "
    "S + 1 per recall",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
)
GENERATIVE_AGENTS = PolicySpec(
    "generative-agents",
    4,
    "policies.generative_agents:GenerativeAgents",
    seed_document="",
    description="reference: Generative Agents (Park et al. 2023), min-max normalized "
    "recency + importance + relevance, no forgetting",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
)

ACTR_SPACING = PolicySpec(
    "actr-spacing",
    3,
    "policies.actr:ACTRSpacing",
    seed_document="",
    description="reference: ACT-R with the spacing-dependent decay of Pavlik & Anderson 2005 "
    "(d_j = c exp(m_j-1) + a)",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
    variant_of="actr",
)
MEMORYBANK_CODE = PolicySpec(
    "memorybank-code",
    2,
    "policies.memorybank:MemoryBankCode",
    seed_document="",
    description="reference: MemoryBank as its released code behaves (forget_memory.py@3869efc: "
    "R = exp(-(t / 5) x S), S + 1 per recall uncapped, kept with probability R at each load, "
    "seeded; every turn its own memory; ranked by similarity)",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
    variant_of="memorybank",
)
GENERATIVE_AGENTS_CODE = PolicySpec(
    "generative-agents-code",
    3,
    "policies.generative_agents:GenerativeAgentsCode",
    seed_document="",
    description="reference: Generative Agents as its released code scores (0.995 ^ rank "
    "recency, the shipped personas' scratch.json value; rank 1 the least recently accessed "
    "as retrieve.py sorts; weights 0.5 recency, 3 relevance, 2 importance)",
    claims="policies.reference_claims",
    capabilities=frozenset({"forget"}),
    variant_of="generative-agents",
)

# Code variants ("each system as built"): each seed system as its public code
# behaves where that departs from its document; only the constants the facts name differ.
PAI_CODE = PolicySpec(
    "pai-code",
    3,
    "policies.pai:PersonalAICode",
    seed_document="000_ec17278fb0252727.txt",
    description="Personal AI as built (devjarus/pai 113345d): the grey zone classifies "
    "REINFORCEMENT / CONTRADICTION and weakens by min(0.2, 1/(n+1)); recency of a "
    "never-accessed belief from updated_at; insights x0.8",
    capabilities=frozenset({"forget"}),
    variant_of="pai",
)
IZZIE_CODE = PolicySpec(
    "izzie-code",
    3,
    "policies.izzie:IzzieCode",
    seed_document="003_29547c4578628b7b.txt",
    description="Izzie as built (izzie2 1604fd6): BM25 search limited to 10, strength >= 0.3, "
    "ranked by strength, confidence and importance",
    capabilities=frozenset({"forget"}),
    variant_of="izzie",
)
KERNLE_CODE = PolicySpec(
    "kernle-code",
    2,
    "policies.kernle:KernleCode",
    seed_document="004_e8e020057e4a0858.txt",
    description="Kernle as built (kernle@7345648): salience with log term + 0.1, at most 10 "
    "forgotten per cycle from the 40 oldest of each type; lessons repeated twice consolidate",
    capabilities=frozenset({"forget", "protect", "recover"}),
    variant_of="kernle",
)
ENGRAM_CODE = PolicySpec(
    "engram-code",
    2,
    "policies.engram:EngramCode",
    seed_document="001_aacff6f19feabb69.txt",
    description="Engram as built (EthanGabis/claude-memory acac56b): evidence counts every "
    "episode of a cluster; first-match classification; R = 0.5 until first access; "
    "stability changes only on expand; the code's archive and merge scans",
    capabilities=frozenset({"forget"}),
    variant_of="engram",
)
COSMO_CODE = PolicySpec(
    "cosmo-code",
    4,
    "policies.cosmo:CosmoCode",
    seed_document="002_79c73a48129ece5d.txt",
    description="Cosmo as built (Saturn 4be0950d): nightly compounding decay in whole days; "
    "the spacing boost moves the gradient of accessed nodes nightly",
    capabilities=frozenset({"forget"}),
    variant_of="cosmo",
)
CLAIRVOYANT = PolicySpec(
    "clairvoyant",
    1,
    "policies.clairvoyant:Clairvoyant",
    baseline=False,
    clairvoyant=True,
    description="reference: Belady retention of raw memories with foreknowledge of every query "
    "(the best recall at a footprint budget; reads ground truth, so not a competitor)",
    capabilities=frozenset({"forget"}),
)
