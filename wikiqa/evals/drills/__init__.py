"""Drills: prompt-injection attacks and misinformation plants run against the agent.

`attacks` and `misinformation` are the drills; `injection` runs them over every attack set and
measures what the quarantine costs on the snapshot's own sentences (`python -m wikiqa.bench
injection` prints it).
"""

from wikiqa.evals.drills.attacks import Attack, DrillResult, drill, load_attacks
from wikiqa.evals.drills.misinformation import MisinformationPlant, load_plants, measure

__all__ = [
    "Attack",
    "DrillResult",
    "MisinformationPlant",
    "drill",
    "load_attacks",
    "load_plants",
    "measure",
]
