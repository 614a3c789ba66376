"""Memory policies, one module per memory model, registered here (loaded lazily)."""
from memsim.registry import register

register("keep-all", 1, "policies.baselines:KeepAll", baseline=True,
         description="baseline: stores every extracted claim, never decays, ranks by cosine",
         capabilities={"forget"})
register("recency", 1, "policies.baselines:Recency", baseline=True,
         description="baseline: cosine x exponential recency, LRU eviction beyond a budget",
         capabilities={"forget"})
register("pai", 1, "policies.pai:PersonalAI", seed_document="000_ec17278fb0252727.txt", description="Personal AI: fixed half-life decay, reinforce/contradict bands, multi-factor recall", capabilities={"forget"})
register("izzie", 1, "policies.izzie:Izzie", seed_document="003_29547c4578628b7b.txt", description="Izzie: per-category exponential decay, relevance x strength", capabilities={"forget"})
register("kernle", 1, "policies.kernle:Kernle", seed_document="004_e8e020057e4a0858.txt", description="Kernle: hyperbolic salience, protection, tombstoning forgetting cycle", capabilities={"forget", "protect", "recover"})
register("engram", 1, "policies.engram:Engram", seed_document="001_aacff6f19feabb69.txt", description="Engram: Beta-Bernoulli beliefs from cold consolidation, spaced-repetition retrieval strength", capabilities={"forget"})
register("cosmo", 1, "policies.cosmo:Cosmo", seed_document="002_79c73a48129ece5d.txt", description="Cosmo: salience decay with recall frequency and spacing effect, candidate/active/core/archived", capabilities={"forget"})
