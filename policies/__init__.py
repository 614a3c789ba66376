"""Memory policies, one module per memory model, registered here (loaded lazily)."""
from memsim.registry import register

register("keep-all", 1, "policies.baselines:KeepAll", baseline=True,
         description="baseline: stores every extracted claim, never decays, ranks by cosine",
         capabilities={"forget"})
register("recency", 1, "policies.baselines:Recency", baseline=True,
         description="baseline: cosine x exponential recency, LRU eviction beyond a budget",
         capabilities={"forget"})
