"""Drills: prompt-injection attacks and misinformation plants run against the agent."""

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
