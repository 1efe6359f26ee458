"""The coverage table: citations are parsed from records' numbering, and every row is consistent."""

from theorylab.claims.coverage import cited_statements, coverage, coverage_markdown, statement_lines
from theorylab.claims.numbered_statements import STATEMENTS


def test_citations_expand_ranges_and_keep_appendix_numbers() -> None:
    assert cited_statements("Liu Lemmas 25-27, Thm 1 (§3.6) = Li Thm 2.2.1, Cor 2.2.2") == {
        ("Lemma", "25"),
        ("Lemma", "26"),
        ("Lemma", "27"),
        ("Theorem", "1"),
        ("Theorem", "2.2.1"),
        ("Corollary", "2.2.2"),
    }
    assert cited_statements("Lemma F.1, Theorem E.1") == {("Lemma", "F.1"), ("Theorem", "E.1")}
    assert cited_statements("Definitions 21-22, Eqs. 4.90-4.91") == {
        ("Definition", "21"),
        ("Definition", "22"),
    }
    assert cited_statements("(R2), Fig. 4.5 right") == set()
    assert cited_statements("Props 4.3.1-4.3.2, Prop 4.1.2 / 4.3.4, Defs 4.1.4-6, Thm E.1-E.2") == {
        ("Proposition", "4.3.1"),
        ("Proposition", "4.3.2"),
        ("Proposition", "4.1.2"),
        ("Proposition", "4.3.4"),
        ("Definition", "4.1.4"),
        ("Definition", "4.1.5"),
        ("Definition", "4.1.6"),
        ("Theorem", "E.1"),
        ("Theorem", "E.2"),
    }
    # ends that differ before the last component, or a reversed range, cite the first number only
    assert cited_statements("Lemmas 4.1.2-4.3.1, Lemmas 7-5") == {("Lemma", "4.1.2"), ("Lemma", "7")}


def test_rows_are_consistent_with_the_statement_lists() -> None:
    rows = coverage()
    assert sum(r["statements"] for r in rows) == sum(len(v) for v in STATEMENTS.values())
    assert all(0 <= r["covered"] <= r["statements"] and 0 <= r["decided"] <= r["experiments"] for r in rows)
    # the records of this family cite Prop 8 and Defs 24-26 of the Liu thesis
    ch42 = next(r for r in rows if r["document"] == "001_6a230b9a9faf2198.txt" and r["chapter"] == "4.2")
    assert ch42["covered"] >= 14
    assert coverage_markdown().count("\n") == len(rows) + 3


def test_sources_give_the_lines_of_the_statements_they_cite() -> None:
    from theorylab.claims import registry

    liu = "001_6a230b9a9faf2198.txt"
    assert statement_lines(liu, "Liu Lemma 34 = Li Lemma 2.2.11") == (4178,)
    assert statement_lines(liu, "Liu Lemmas 25-27") == (4012, 4020, 4031)
    assert statement_lines(liu, "(R2), Fig. 4.5 right") == ()
    assert statement_lines("no-such-document.txt", "Lemma 34") == ()
    assert registry.get("dyck.lem34").source.lines == (4178,)
    assert registry.get("mple.thm4.1.1").source.lines == (3506,)
