"""The documents pages: a person's readable collections and a new one; a collection's files,
uploads, and its indexing (start, cancel, progress: live over the collection's socket,
dashboard/documents/consumers.py; without script the page reloads itself while a job runs)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.documents.forms import CollectionForm
from documents import folders, selectors, services
from documents.models import Document, IndexJob
from inference.services import indexing
from infra.errors import ClientError


def _readable(request: HttpRequest, collection_id: int):
    try:
        return selectors.collection_for_reader(request.user, collection_id)
    except ClientError:
        raise Http404(_("No such collection, or it is not shared with you.")) from None


def _owned(request: HttpRequest, collection_id: int):
    try:
        return selectors.collection_for_owner(request.user, collection_id)
    except ClientError:
        raise Http404(_("No such collection, or it is not shared with you.")) from None


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def collections(request: HttpRequest) -> HttpResponse:
    form = CollectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            collection = services.collection_create(
                owner=request.user,
                name=form.cleaned_data["name"],
                visibility=form.cleaned_data["visibility"],
                folder=form.cleaned_data["folder"],
                readers=form.reader_names(),
            )
        except ClientError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect("documents_collection", collection_id=collection.id)
    context = {
        "form": form,
        "collections": selectors.collections_listing(request.user),
        "documents_dir": settings.HOMEAI_DOCUMENTS_DIR,
    }
    return render(request, "documents/collections.html", context, status=400 if form.errors else 200)


@login_required
@never_cache
def collection(request: HttpRequest, collection_id: int) -> HttpResponse:
    found = _readable(request, collection_id)
    job = selectors.latest_job(found)
    context = {
        "collection": found,
        "owned": found.owner_id == request.user.id or (request.user.is_staff and found.visibility == "household"),
        "documents": Document.objects.filter(collection=found),
        "job": job,
        "progress": selectors.job_progress(job) if job else None,
        "running": job is not None and job.status in IndexJob.ACTIVE,
        "ws_path": f"/ws/documents/{found.id}/",
        "max_mb": settings.HOMEAI_DOCUMENT_MAX_MB,
    }
    return render(request, "documents/collection.html", context)


@login_required
@require_POST
def upload(request: HttpRequest, collection_id: int) -> HttpResponse:
    found = _owned(request, collection_id)
    sent = request.FILES.getlist("files")
    if not sent:
        messages.error(request, _("Choose one or more files to upload."))
    for handle in sent:
        try:
            name = services.upload_add(collection=found, name=handle.name, chunks=handle.chunks())
        except ClientError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, _("Uploaded %(name)s; index the collection to search it.") % {"name": name})
    return redirect("documents_collection", collection_id=found.id)


@login_required
@require_POST
def index(request: HttpRequest, collection_id: int) -> HttpResponse:
    found = _owned(request, collection_id)
    holders = indexing.embedding_holders()
    indexing.index_start(user=request.user, collection=found, holders=holders)
    if not holders:
        messages.info(request, _("No worker with the embedding model is running; indexing starts when one does."))
    return redirect("documents_collection", collection_id=found.id)


@login_required
@require_POST
def cancel(request: HttpRequest, collection_id: int) -> HttpResponse:
    found = _owned(request, collection_id)
    indexing.index_cancel(collection=found)
    messages.info(request, _("Indexing stops after the file it is reading."))
    return redirect("documents_collection", collection_id=found.id)


@login_required
@never_cache
def document_file(request: HttpRequest, collection_id: int, document_id: int) -> HttpResponse:
    """A file of a collection the person reads; 404 for everyone else."""
    try:
        document = selectors.document_for_reader(request.user, collection_id, document_id)
        path = folders.file_path(document)
        handle = path.open("rb")
    except (ClientError, OSError):
        raise Http404(_("No such file in this collection.")) from None
    return folders.file_response(handle, path)
