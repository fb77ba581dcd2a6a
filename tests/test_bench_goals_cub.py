"""A goal against CUB is met only when the record's x_cub reaches it, and says so in CUB's terms."""

from course.bench.records import MET, NO_DATA, NOT_MET, Goal, evaluate_goal


def _rec(**kw):
    base = {
        "topic": "scan",
        "kind": "kernel",
        "kernel": "lookback",
        "n": 2**22,
        "dtype": "float32",
        "ms": 1.0,
    }
    return {**base, **kw}


def test_a_cub_goal_is_met_only_at_or_above_cubs_speed():
    goal = Goal("scan", 2**22, "float32", min_x_cub=1.0)
    assert evaluate_goal(goal, [_rec(x_cub=1.02)]).status == MET
    assert evaluate_goal(goal, [_rec(x_cub=0.95)]).status == NOT_MET
    assert evaluate_goal(goal, [_rec(x_cub=None)]).status == NOT_MET  # CUB not timed is not a win
    assert evaluate_goal(goal, [_rec(n=2**24, x_cub=2.0)]).status == NO_DATA


def test_a_cub_goal_is_told_in_cubs_terms():
    goal = Goal("reduction", 2**22, "float32", min_pct_of_copy=85, min_x_cub=1.0)
    assert goal.describe() == "≥ 85 % of copy and ≥ 1× CUB"
    said = goal.achieved(_rec(topic="reduction", x_cub=0.97, pct_of_copy=88.04, x_cupy=1.5))
    assert "0.97× CUB" in said and "88.0 % of copy" in said
