"""The tools page: each person turns tools on and off (for all their chats, or for one chat);
staff register MCP servers, refresh their tools, mark which act on the world, remove them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from inference import selectors
from inference.models import ToolServer
from inference.services import tools as services
from inference.tools import catalog
from infra.errors import ClientError


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def tools_page(request: HttpRequest, conversation_id: int | None = None) -> HttpResponse:
    conversation = None
    if conversation_id is not None:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
        if conversation is None:
            raise Http404("No such chat.")
    tools = catalog.all_tools()
    if request.method == "POST":
        on = set(request.POST.getlist("on"))
        off = [tool["key"] for tool in tools if tool["key"] not in on]
        if conversation is None:
            services.person_tools_set(user=request.user, off=off)
        else:
            services.conversation_tools_set(user=request.user, conversation_id=conversation.id, off=off)
        messages.success(request, _("Saved: the next answer is offered these tools."))
        return redirect(request.path)
    off = set(catalog.person_off(request.user))
    if conversation is not None:
        off |= set(conversation.tools_off)
    context = {
        "tools": [{**tool, "on": tool["key"] not in off} for tool in tools],
        "conversation": conversation,
        "servers": ToolServer.objects.all() if request.user.is_staff else [],
        "transports": ToolServer.Transport.choices,
    }
    return render(request, "tools/tools.html", context)


@staff_member_required
@require_POST
def server_add(request: HttpRequest) -> HttpResponse:
    try:
        server = services.server_create(
            name=request.POST.get("name", ""),
            transport=request.POST.get("transport", ""),
            address=request.POST.get("address", ""),
        )
    except ClientError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Registered %(name)s.") % {"name": server.name})
    return redirect(reverse("tools") + "#servers")


@staff_member_required
@require_POST
def server_change(request: HttpRequest, server_id: int) -> HttpResponse:
    action = request.POST.get("action")
    try:
        if action == "refresh":
            server = ToolServer.objects.filter(id=server_id).first()
            if server is None:
                raise Http404("No such server.")
            services.server_refresh(server=server)
        elif action == "remove":
            ToolServer.objects.filter(id=server_id).delete()
        elif action == "save":
            server = services.server_set(server_id=server_id, enabled=request.POST.get("enabled") == "on")
            acting = {tool["name"]: tool["name"] in request.POST.getlist("acts") for tool in server.tools}
            services.server_set(server_id=server_id, acting=acting)
        else:
            raise Http404("No such action.")
    except ClientError as exc:
        messages.error(request, exc.message)
    return redirect(reverse("tools") + "#servers")
