"""The suggested bundles of the instructors' page: one lecture, a module per part, the
language-model bundle and self-study, planned in sessions from the chapters' stated minutes;
and a whole term, one chapter a week, with its graded labs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tools.instructors_entries import (
    Entry,
    chapters_phrase,
    exercise_ref,
    format_hours,
    format_minutes,
    in_minutes,
    join_names,
    total_minutes,
)
from tools.instructors_graph import ancestors, prerequisites
from tools.repository import Exercise

SESSION_MINUTES = 90
SESSIONS_PER_WEEK = 2
# The one-lecture path: the chapters that make self-attention itself, taught in one session.
ONE_LECTURE = ("03_self_attention_basics", "04_queries_keys_values")
# A whole term: one numbered chapter a week, then the appendix and a review.
TERM_WEEKS = 15
# Its graded labs, placed by hand: consecutive chapters, every numbered chapter in one (a test
# fails until a new chapter is). A lab is handed out in the week of its last chapter and is
# due a week later.
LABS = (
    ("01_dot_product_similarity", "02_softmax", "03_self_attention_basics"),
    ("04_queries_keys_values", "05_scaling", "06_masks"),
    ("07_multi_head_attention", "08_positional_encoding", "09_encoder_block"),
    ("10_decoder_and_cross_attention", "11_attention_at_scale", "12_gpt_from_the_pieces"),
    ("13_attention_in_modern_llms", "14_what_attention_heads_learn"),
)
# The part whose chapters, with everything they build on, make the language-model bundle.
LANGUAGE_MODEL_PART = "Part IV — Attention in today's language models"


def _entry_list(entries: Sequence[Entry]) -> str:
    return join_names([f"{{doc}}`{entry.doc}`" for entry in entries])


def one_lecture(entries: Sequence[Entry]) -> str:
    by_stem = {entry.stem: entry for entry in entries}
    missing = [stem for stem in ONE_LECTURE if stem not in by_stem]
    if missing:
        raise ValueError(f"the one-lecture path names unpublished notebooks: {missing}")
    lecture = [by_stem[stem] for stem in ONE_LECTURE]
    above = ancestors(prerequisites(entries))
    before = [e for e in entries if any(e.stem in above[s] for s in ONE_LECTURE)]
    before = [e for e in before if e.stem not in ONE_LECTURE]
    class_time = total_minutes(e.minutes("cells") for e in lecture)
    reading = total_minutes(e.minutes("cells") for e in before)
    easy = [
        f"{exercise_ref(exercise)} ({entry.name})"
        for entry in lecture
        for exercise in entry.chapter.exercises
        if exercise.level == "easy"
    ]
    spare = SESSION_MINUTES - class_time[1]
    lines = [
        f"Self-attention itself, from the weighted average to queries, keys and values, in one "
        f"{SESSION_MINUTES}-minute session.",
        "",
        f"- **Before** (reading at home, about {format_minutes(reading)} minutes): "
        f"{_entry_list(before)}.",
        f"- **In class** ({format_minutes(class_time)} minutes for the cells"
        + (
            f", leaving about {spare} minutes for questions and a first exercise"
            if spare > 0
            else ""
        )
        + f"): {_entry_list(lecture)}.",
        f"- **After** (homework): {join_names(easy) or 'the first exercise of each chapter'}; "
        "the medium ones for those who want more.",
    ]
    return "\n".join(lines)


def session_plan(members: Sequence[Entry], heading: str) -> str:
    """The chapters in reading order, as many per session as fit, their exercises as
    homework, and a last session for questions and the hard exercises."""
    sessions: list[list[Entry]] = []
    for entry in members:
        time = entry.minutes("cells") or (SESSION_MINUTES, SESSION_MINUTES)
        used = total_minutes(e.minutes("cells") for e in sessions[-1]) if sessions else None
        if sessions and used and used[1] + time[1] <= SESSION_MINUTES:
            sessions[-1].append(entry)
        else:
            sessions.append([entry])
    n_sessions = len(sessions) + 1  # and one for the hard exercises and questions
    weeks = math.ceil(n_sessions / SESSIONS_PER_WEEK)
    lines = [
        f"**{heading}** — {n_sessions} sessions, {weeks} "
        f"week{'s' if weeks > 1 else ''} at {SESSIONS_PER_WEEK} sessions a week:",
        "",
    ]
    for index, session in enumerate(sessions):
        week, day = divmod(index, SESSIONS_PER_WEEK)
        class_time = total_minutes(e.minutes("cells") for e in session)
        home_time = total_minutes(e.minutes("exercises") for e in session)
        lines.append(
            f"{index + 1}. Week {week + 1}, session {day + 1}: {chapters_phrase(session)} "
            f"({format_minutes(class_time)} minutes in class; homework: "
            f"{'their' if len(session) > 1 else 'its'} exercises, "
            f"{format_minutes(home_time)} minutes)."
        )
    week, day = divmod(len(sessions), SESSIONS_PER_WEEK)
    hard = sum(ex.level == "hard" for e in members for ex in e.chapter.exercises)
    lines.append(
        f"{n_sessions}. Week {week + 1}, session {day + 1}: questions, and "
        + (f"the {hard} hard exercises" if hard != 1 else "the hard exercise")
        + " worked through together."
    )
    return "\n".join(lines)


def modules(entries: Sequence[Entry]) -> str:
    blocks = []
    numbered_parts = dict.fromkeys(e.part_index for e in entries if e.numbered)
    for part_index in numbered_parts:
        members = [e for e in entries if e.part_index == part_index]
        blocks.append(session_plan(members, members[0].part))
    return "\n\n".join(blocks)


def language_models(entries: Sequence[Entry]) -> str:
    """The bundle for a course on language models: the chapters of the language-model part
    and every chapter they build on, directly or not (their prerequisites as their opening
    cells link them), in reading order."""
    graph = prerequisites(entries)
    above = ancestors(graph)
    targets = [e for e in entries if e.part == LANGUAGE_MODEL_PART]
    if not targets:
        raise ValueError(f"no published chapter in the part {LANGUAGE_MODEL_PART!r}")
    needed = {e.stem for e in targets}.union(*(above[e.stem] for e in targets))
    members = [e for e in entries if e.stem in needed and e.numbered]
    left_out = [e for e in entries if e.numbered and e.stem not in needed]
    intro = (
        f"For learners who come for language models: {chapters_phrase(targets)}, with every "
        f"chapter {'they build' if len(targets) > 1 else 'it builds'} on, directly or through "
        f"another chapter ({len(members)} chapters in all)."
    )
    if left_out:
        intro += f" Not needed for them: {chapters_phrase(left_out)}."
    return intro + "\n\n" + session_plan(members, "Language models")


def graded(exercises: Iterable[Exercise]) -> tuple[list[Exercise], list[Exercise]]:
    """The exercises that ``make grade`` grades (those with a checker): required, optional."""
    checked = [exercise for exercise in exercises if exercise.checker]
    return [e for e in checked if not e.optional], [e for e in checked if e.optional]


def points_phrase(exercises: Iterable[Exercise]) -> str:
    """ "4 exercises for 6 points", and the optional ones' bonus points."""
    required, optional = graded(exercises)
    phrase = f"{len(required)} exercises for {sum(e.points for e in required)} points"
    if optional:
        bonus = sum(e.points for e in optional)
        phrase += f", plus {len(optional)} optional for {bonus} bonus point{'s' * (bonus != 1)}"
    return phrase


@dataclass
class Lab:
    """A graded lab of the term: its chapters, the week it is handed out and the week due."""

    number: int
    chapters: list[Entry]
    handed_out: int
    due: int

    @property
    def exercises(self) -> list[Exercise]:
        return [exercise for entry in self.chapters for exercise in entry.chapter.exercises]


def term_plan(entries: Sequence[Entry]) -> tuple[dict[str, int], list[Lab]]:
    """The week of each numbered chapter (one a week, in reading order), and the labs of
    :data:`LABS`, which must hold every numbered chapter once, in reading order."""
    numbered = [entry for entry in entries if entry.chapter.number is not None]
    if len(numbered) >= TERM_WEEKS:
        raise ValueError(f"{len(numbered)} chapters, one a week, leave no week of a "
                         f"{TERM_WEEKS}-week term for the appendix and a review")  # fmt: skip
    if [stem for lab in LABS for stem in lab] != [entry.stem for entry in numbered]:
        raise ValueError(
            "LABS must hold every numbered chapter once, in reading order: "
            f"{[entry.stem for entry in numbered]}"
        )
    week = {entry.stem: index for index, entry in enumerate(numbered, start=1)}
    by_stem = {entry.stem: entry for entry in numbered}
    labs = [
        Lab(number, [by_stem[stem] for stem in lab], week[lab[-1]], week[lab[-1]] + 1)
        for number, lab in enumerate(LABS, start=1)
    ]
    return week, labs


def term(entries: Sequence[Entry]) -> str:
    week_of, labs = term_plan(entries)
    events: dict[int, list[str]] = {}
    for lab in labs:
        events.setdefault(lab.handed_out, []).append(
            f"Lab {lab.number} ({chapters_phrase(lab.chapters)}) handed out."
        )
        events.setdefault(lab.due, []).append(f"Lab {lab.number} due.")

    def item(week: int, text: str) -> str:
        return f"{week}. Week {week}: {text}" + "".join(f" {e}" for e in events.get(week, []))

    numbered = [entry for entry in entries if entry.stem in week_of]
    lines = [
        item(
            week_of[entry.stem],
            f"chapter {entry.chapter.number}, {{doc}}`{entry.doc}`. "
            f"{in_minutes(entry.minutes('cells'))} of cells in class; in the lab session, "
            f"{points_phrase(entry.chapter.exercises)} (about "
            f"{in_minutes(entry.minutes('exercises'))} of exercises).",
        )
        for entry in numbered
    ]
    lines += [
        item(week, "catching up, or a small project built on the course.")
        for week in range(len(numbered) + 1, TERM_WEEKS)
    ]
    appendix = "".join(
        f"the appendix, {{doc}}`{entry.doc}` (its quiz in class), and "
        for entry in entries
        if entry.stem not in week_of
    )
    lines.append(item(TERM_WEEKS, f"{appendix}a review of the term."))
    in_class = total_minutes(entry.minutes("cells") for entry in numbered)
    at_home = total_minutes(entry.minutes("exercises") for entry in numbered)
    exercises = [exercise for lab in labs for exercise in lab.exercises]
    lines += [
        "",
        f"In all: {in_minutes(in_class)} of chapters in class and {in_minutes(at_home)} of "
        f"exercises; the {len(labs)} labs grade {points_phrase(exercises)}.",
    ]
    return "\n".join(lines)


def labs(entries: Sequence[Entry]) -> str:
    blocks = []
    for lab in term_plan(entries)[1]:
        required, optional = graded(lab.exercises)
        points, bonus = sum(e.points for e in required), sum(e.points for e in optional)
        at_home = total_minutes(entry.minutes("exercises") for entry in lab.chapters)
        rows = [
            f"**Lab {lab.number} — {chapters_phrase(lab.chapters)}** (handed out in week "
            f"{lab.handed_out}, due in week {lab.due}; about {in_minutes(at_home)} of "
            f"exercises): {points} points" + (f", and {bonus} bonus points." if bonus else "."),
            "",
            "| ch. | exercise | difficulty | points |",
            "|---|---|---|---|",
        ]
        for entry in lab.chapters:
            for exercise in entry.chapter.exercises:
                if exercise.checker:
                    level = (exercise.level or "—") + (" (optional)" * exercise.optional)
                    worth = f"{exercise.points}" + (" (bonus)" * exercise.optional)
                    rows.append(f"| {entry.short} | {exercise_ref(exercise)} | {level} | {worth} |")
        total = f"**{points}**" + (f" (+{bonus} bonus)" if bonus else "")
        rows.append(f"| | **total** | | {total} |")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def self_study(entries: Sequence[Entry]) -> str:
    """The whole course; notebooks whose time is not stated in minutes (the appendix, whose
    time is per item) are named after the total, not counted in it."""
    timed = [e for e in entries if e.chapter.minutes]
    untimed = [e for e in entries if not e.chapter.minutes]
    total = sum(int(e.chapter.minutes["total"]) for e in timed)
    n_exercises = sum(len(e.chapter.exercises) for e in timed)
    then = "".join(
        f" Then the appendix {{doc}}`{e.doc}` ({e.chapter.estimated_time[0].lower()}"
        f"{e.chapter.estimated_time[1:].rstrip('.')})."
        for e in untimed
    )
    return (
        f"All {len(timed)} chapters in reading order: about {total} minutes (some "
        f"{format_hours(total)} hours) with all {n_exercises} exercises, for instance one "
        f"chapter a day.{then} Each chapter runs on its own, so a learner who already knows a "
        "topic can skip its chapter; the diagram above shows what each chapter really needs."
    )
