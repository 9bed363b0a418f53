"""SailorFog-QA-V2-style question synthesis from a dump's own knowledge graph.

    from wikisim.index import open_index
    from wikisim.synth.source import graph_from_store
    from wikisim.synth.pipeline import SynthConfig, generate

    kg = graph_from_store(open_index(path).store).kg       # pages -> typed, densified graph
    run = generate(kg, SynthConfig(n=100, seed=0))           # walks -> WL dedupe -> orbits -> verified questions
    run.records[0]["question"], run.records[0]["answer"]

Modules, in data-flow order: attrs/graph (entities and relations), densify (title mentions),
expand (search/visit discovery over a Backend), sample (random walks, WL hashes), orbits,
uncertainty (facts), solver and questions (uniqueness), render, rewrite (optional paraphrase),
verify (independent re-check), splits, report, solvability (oracle and top-hit baseline).
"""
