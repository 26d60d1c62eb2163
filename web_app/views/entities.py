"""Entities in the memory browser: the list with a relationship picture, and one entity's page
(description and its history, mentions linking to memories and sessions, related entities)."""

from __future__ import annotations

import math

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from entities_app.selectors import (
    entities_for_user,
    entity_get_for_user,
    entity_graph,
    entity_mentions,
    entity_related,
)
from memory_site.errors import NotFound
from privacy_app.selectors import browse_target, can_browse_all
from privacy_app.services.access_log import access_log_record
from web_app.selectors import entity_for_staff
from web_app.views.memories import viewing_context

PAGE_SIZE = 30
GRAPH_SIZE = 420
# One colour per type (white text on each passes WCAG AA): picture and badges agree.
TYPE_COLOURS = {
    "person": "#1d4ed8",
    "pet": "#b45309",
    "place": "#047857",
    "organization": "#6d28d9",
    "project": "#b91c1c",
    "product": "#0e7490",
    "event": "#be185d",
    "concept": "#374151",
    "other": "#4b5563",
}


def relationship_picture(graph: dict) -> dict:
    """Positions for a server-drawn SVG: entities on a circle (most mentioned first, sized by
    mentions), a line per link (wider when stronger). No JavaScript, no library."""
    nodes = graph["nodes"]
    if not nodes:
        return {"size": GRAPH_SIZE, "nodes": [], "edges": []}
    centre, radius = GRAPH_SIZE / 2, GRAPH_SIZE / 2 - 60
    top = max(node.mention_count for node in nodes) or 1
    placed = {}
    for index, node in enumerate(nodes):
        angle = 2 * math.pi * index / len(nodes) - math.pi / 2
        placed[node.id] = {
            "id": node.id,
            "name": node.name,
            "type": node.type,
            "colour": TYPE_COLOURS.get(node.type, TYPE_COLOURS["other"]),
            "x": round(centre + radius * math.cos(angle), 1),
            "y": round(centre + radius * math.sin(angle), 1),
            "r": round(5 + 9 * math.sqrt(node.mention_count / top), 1),
            "label_y": round(centre + (radius + 22) * math.sin(angle) + 4, 1),
            "label_x": round(centre + (radius + 22) * math.cos(angle), 1),
        }
    strongest = max((strength for _, _, strength in graph["edges"]), default=1)
    edges = [
        {
            "x1": placed[source]["x"],
            "y1": placed[source]["y"],
            "x2": placed[target]["x"],
            "y2": placed[target]["y"],
            "width": round(1 + 3 * strength / strongest, 1),
        }
        for source, target, strength in graph["edges"]
        if source in placed and target in placed
    ]
    return {"size": GRAPH_SIZE, "nodes": list(placed.values()), "edges": edges}


@login_required
def entity_list(request):
    target = browse_target(request)
    kind = request.GET.get("type") or ""
    if kind and kind not in TYPE_COLOURS:
        kind = ""
    query = (request.GET.get("q") or "").strip()[:200]
    entities = entities_for_user(user=target, type=kind or None, q=query or None)
    page_obj = Paginator(entities, PAGE_SIZE).get_page(request.GET.get("page"))
    for entity in page_obj.object_list:
        entity.colour = TYPE_COLOURS.get(entity.type, TYPE_COLOURS["other"])
    access_log_record(request=request, target_user=target, object_type="entity_list")
    return render(
        request,
        "memories/entities.html",
        {
            "nav": "memories",
            "subnav": "entities",
            "page_obj": page_obj,
            "types": list(TYPE_COLOURS),
            "selected_type": kind,
            "query": query,
            "picture": relationship_picture(entity_graph(user=target)),
            **viewing_context(request, target),
        },
    )


def _entity_for_viewer(*, viewer, entity_id: int):
    try:
        return entity_get_for_user(user=viewer, entity_id=entity_id)
    except NotFound:
        if can_browse_all(viewer):
            entity = entity_for_staff(entity_id=entity_id)
            if entity is not None:
                return entity
        raise Http404("No such entity.") from None


@login_required
def entity_detail(request, entity_id: int):
    entity = _entity_for_viewer(viewer=request.user, entity_id=entity_id)
    access_log_record(
        request=request, target_user=entity.user, object_type="entity", object_id=entity.id
    )
    return render(
        request,
        "memories/entity_detail.html",
        {
            "nav": "memories",
            "subnav": "entities",
            "entity": entity,
            "colour": TYPE_COLOURS.get(entity.type, TYPE_COLOURS["other"]),
            "mentions": entity_mentions(entity=entity),
            "related": entity_related(entity=entity),
            "viewing_other": entity.user_id != request.user.pk,
        },
    )
