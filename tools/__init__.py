"""Maintenance scripts of the course: the instructors' page, student copies, grading,
retargeting a fork.

Run them from the repository root as modules (``python -m tools.student_copies``) or through
the Makefile (``make instructors``, ``make student``, ``make grade SUBMISSIONS=…``,
``make retarget REPO=…``).
"""
