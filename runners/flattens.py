"""A Flatten whose input is another Flatten's output, read by nothing else, takes that Flatten's inputs instead.

The crawl's graph flattens what its composites flattened already: ``AllEvents`` takes ``Prepare``'s events, which
``Prepare`` flattened from its branches, ``AllDeletes`` takes ``Freshness``'s deletes, and so on. FnApiRunner
runs every Flatten of several inputs as writes into a buffer and a stage that reads it (``sink_flattens``), so a
Flatten fed by a Flatten was a stage of its own that only copied one buffer into the next: seven bundles of a
one-file crawl that did nothing else, each a round trip to a worker (issue 27, target 2: a one-file crawl in at
most 2 s). The elements are the same — a Flatten's output is the union of its inputs, so the union of unions is
the union of their inputs, each as often as it was before — and the runner's own coder fix
(``fix_flatten_coders``) still transcodes any input whose coder differs from the output's.

Done on a copy of the pipeline's proto as the local runner turns it into stages (runners/direct.py); the graph
the command built, and what other runners are given, stay as they were.
"""

from __future__ import annotations

import copy


def merged(pipeline_proto):
    """A copy of ``pipeline_proto`` with each Flatten that is the only reader of another Flatten's output reading
    that Flatten's inputs instead, and the inner Flatten removed."""
    from apache_beam.portability import common_urns
    from apache_beam.runners.portability.fn_api_runner import translations

    flatten = common_urns.primitives.FLATTEN.urn
    proto = copy.deepcopy(pipeline_proto)
    transforms = proto.components.transforms
    known = translations.union(frozenset([flatten, common_urns.primitives.GROUP_BY_KEY.urn]),
                               translations.KNOWN_COMPOSITES)
    leaves = list(_leaves(transforms, proto.root_transform_ids, known))
    readers: dict[str, int] = {}
    flattens: dict[str, str] = {}  # the output of each Flatten: the Flatten's id
    for name in leaves:
        leaf = transforms[name]
        for pcoll in leaf.inputs.values():
            readers[pcoll] = readers.get(pcoll, 0) + 1
        if leaf.spec.urn == flatten and len(leaf.outputs) == 1:
            flattens[next(iter(leaf.outputs.values()))] = name

    def inputs_of(pcoll: str, into: list[str], gone: list[str]) -> None:
        inner = flattens.get(pcoll)
        if inner is None or readers.get(pcoll) != 1:
            into.append(pcoll)
            return
        gone.append(inner)
        for each in transforms[inner].inputs.values():
            inputs_of(each, into, gone)

    removed: set[str] = set()
    for name in leaves:
        leaf = transforms[name]
        if leaf.spec.urn != flatten or name in removed:
            continue
        into: list[str] = []
        gone: list[str] = []
        for pcoll in leaf.inputs.values():
            inputs_of(pcoll, into, gone)
        if not gone:
            continue
        removed.update(gone)
        leaf.inputs.clear()
        leaf.inputs.update({str(k): pcoll for k, pcoll in enumerate(into)})
    if not removed:
        return pipeline_proto
    for transform in transforms.values():
        if any(sub in removed for sub in transform.subtransforms):
            kept = [sub for sub in transform.subtransforms if sub not in removed]
            del transform.subtransforms[:]
            transform.subtransforms.extend(kept)
    kept_roots = [root for root in proto.root_transform_ids if root not in removed]
    del proto.root_transform_ids[:]
    proto.root_transform_ids.extend(kept_roots)
    for name in removed:
        del transforms[name]
    return proto


def _leaves(transforms, names, known):
    """The ids of the transforms FnApiRunner makes its first stages of (``translations.leaf_transform_stages``):
    known composites whole, the leaves of the others, none that only hands its input on."""
    for name in names:
        transform = transforms[name]
        if transform.spec.urn in known:
            yield name
        elif not transform.subtransforms:
            if set(transform.outputs.values()) - set(transform.inputs.values()):
                yield name
        else:
            yield from _leaves(transforms, transform.subtransforms, known)
