"""The memory browser: search and filter memories, read one with its source and history, and
let its owner edit or delete it (through ingestion_app's memory services)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from entities_app.selectors import memory_links
from ingestion_app.selectors import memory_get_for_user, memory_history
from ingestion_app.services.memories import memory_delete, memory_update
from memory_site.errors import InvalidInput, NotFound, UpstreamError
from privacy_app.selectors import browse_target, can_browse_all
from privacy_app.services.access_log import access_log_record
from web_app.display import match_reasons, snippet_html
from web_app.forms import MemoryEditForm, MemorySearchForm
from web_app.selectors import (
    MemoryFilters,
    memories_browse,
    memories_search,
    memory_counts,
    memory_filter_choices,
    memory_for_viewer,
    memory_provenance,
    usernames,
)

PAGE_SIZE = 25


def viewing_context(request, target) -> dict:
    """Template context shared by the browser's list pages (whose data, and the staff picker)."""
    others = target.pk != request.user.pk
    return {
        "target_user": target,
        "viewing_other": others,
        "user_query": f"?user={target.get_username()}" if others else "",
        "can_browse_all": can_browse_all(request.user),
        "usernames": usernames() if can_browse_all(request.user) else [],
        # Counted as the stats API and the sessions pages count (one selector for all three).
        "memory_counts": memory_counts(user=target),
    }


def _result_row(item, query: str) -> dict:
    """A search hit or a stored row, as the results list shows it."""
    return {
        "id": item.id,
        "source": item.source,
        "header": item.header,
        "snippet": snippet_html(item.content, query),
        "topics": list(item.topics or []),
        "occurred_at": item.occurred_at,
        "chat_session_id": item.chat_session_id,
        "score": getattr(item, "score", None),
        "similarity": getattr(item, "similarity", None),
        "keyword_rank": getattr(item, "keyword_rank", None),
        "relevance": _number_or_none(getattr(item, "relevance", None)),
        # Why a search hit matched ("keyword #2 · vector #1"); nothing for a browsed row.
        "reasons": match_reasons(getattr(item, "why", None)),
    }


def _number_or_none(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@login_required
def memory_list(request):
    """Search (hybrid) or browse (newest first) the memories of the caller, or of `?user=` for
    staff with the browse permission (logged). htmx requests get the results partial only."""
    target = browse_target(request)
    form = MemorySearchForm(request.GET)
    rows, page_obj, search, query = [], None, None, ""
    if form.is_valid():
        data = form.cleaned_data
        query = data["q"].strip()
        filters = MemoryFilters(
            sources=data["source"],
            project_id=data["project"].strip(),
            app_id=data["app"].strip(),
            topic=data["topic"].strip(),
            since=data["since"],
            until=data["until"],
        )
        if query:
            search = memories_search(user=target, query=query, filters=filters)
            rows = [_result_row(hit, query) for hit in search.hits]
        else:
            page_obj = Paginator(memories_browse(user=target, filters=filters), PAGE_SIZE).get_page(
                request.GET.get("page")
            )
            rows = [_result_row(item, "") for item in page_obj.object_list]
    access_log_record(request=request, target_user=target, object_type="memory_list")
    context = {
        "nav": "memories",
        "subnav": "memories",
        "form": form,
        "rows": rows,
        "page_obj": page_obj,
        "search": search,
        "query": query,
        "choices": memory_filter_choices(user=target),
        **viewing_context(request, target),
    }
    if request.headers.get("HX-Request") and request.headers.get("HX-Target") == "results":
        return render(request, "memories/_results.html", context)
    return render(request, "memories/list.html", context)


def _detail_context(request, memory, *, form=None) -> dict:
    is_owner = memory.user_id == request.user.pk
    if is_owner and form is None:
        form = MemoryEditForm(
            initial={
                "content": memory.content,
                "topics": ", ".join(memory.topics or []),
                "project_id": memory.project_id,
            }
        )
    return {
        "nav": "memories",
        "subnav": "memories",
        "memory": memory,
        "owner": memory.user,
        "is_owner": is_owner,
        "provenance": memory_provenance(memory=memory),
        "history": list(memory_history(memory=memory)),
        "links": memory_links(memory=memory),
        "form": form if is_owner else None,
    }


@login_required
def memory_detail(request, memory_id: int):
    browse_target(request)  # `?user=` naming someone else: 403 unless browsing staff
    memory = memory_for_viewer(viewer=request.user, memory_id=memory_id)
    access_log_record(
        request=request, target_user=memory.user, object_type="memory", object_id=memory.id
    )
    return render(request, "memories/detail.html", _detail_context(request, memory))


def _own_memory(request, memory_id: int):
    """Only the owner edits or deletes; anyone else gets the page-not-found answer."""
    try:
        return memory_get_for_user(user=request.user, memory_id=memory_id)
    except NotFound:
        raise Http404("No such memory.") from None


@login_required
@require_POST
def memory_edit(request, memory_id: int):
    memory = _own_memory(request, memory_id)
    form = MemoryEditForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            memory_update(
                user=request.user,
                memory_id=memory.id,
                content=data["content"],
                topics=data["topics"],
                project_id=data["project_id"].strip(),
                reason=data["reason"].strip(),
            )
        except InvalidInput as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        except UpstreamError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Memory #{memory.id} updated.")
            return redirect("web:memory-detail", memory_id=memory.id)
    return render(
        request, "memories/detail.html", _detail_context(request, memory, form=form), status=400
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete_view(request, memory_id: int):
    """GET asks for confirmation; POST deletes for real (row, embedding, history)."""
    memory = _own_memory(request, memory_id)
    if request.method == "POST":
        memory_delete(user=request.user, memory_id=memory.id)
        messages.success(request, f"Memory #{memory_id} deleted.")
        return redirect(reverse("web:memories"))
    return render(
        request,
        "memories/confirm_delete.html",
        {"nav": "memories", "subnav": "memories", "memory": memory},
    )
