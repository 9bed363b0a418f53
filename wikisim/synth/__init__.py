"""SailorFog-QA-V2-style questions over typed facts about real entities, in natural English.

    from wikisim.index import open_index
    from wikisim.synth.source import facts_from_store
    from wikisim.synth.pipeline import SynthConfig, generate

    db = facts_from_store(open_index(path).store, "facts.sqlite").db   # pages -> typed facts (SQLite)
    run = generate(db, SynthConfig(n=100, seed=0))   # walks -> WL dedupe -> orbits -> verified questions
    run.records[0]["question"], run.records[0]["answer"]

Modules, in data-flow order: attrs (dates, quantities), kinds (entity kinds), facts (typed facts
of a page: infobox vocabulary, categories, lead patterns), mentions (co-occurrence in plain
text), factdb (the indexed SQLite fact table), source and expand (a store, or what search and
visit reach from seeds), sample (random walks, WL hashes), orbits, uncertainty (candidate
facts), solver and questions (uniqueness), english (the realiser), rewrite (optional
paraphrase), verify (independent SQL re-check), splits, report, solvability (env-step oracle
and search baseline).
"""
