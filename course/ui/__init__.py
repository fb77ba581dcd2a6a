"""What the learner sees and moves: the widget panel every topic opens (`panel.py`: version, N and
block; the check, the metrics and the picture, live) and the canvas its labels are drawn on once
(`canvas.py`). The engine (course/engine/) plans and runs the launches the panel shows."""
