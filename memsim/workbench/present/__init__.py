"""Presentation: the shared style, markdown tables and reports, figures, one module per study
where it helps. It imports studies, stats, runs and the engine."""
