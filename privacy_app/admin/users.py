"""Admin actions on users: download all their data, erase all of it (with a confirmation page).

The User admin already registered (Django's, or another app's subclass) is extended rather than
replaced, so its list columns and forms stay as they are. It also serves sessions_app's usage &
cost report under the user list (`/admin/auth/user/usage-report/`).
"""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from memory_site.errors import DomainError
from privacy_app.services.user_data import user_data_counts, user_erase, user_export
from sessions_app.admin.usage import usage_report_view

User = get_user_model()
_registered = admin.site.get_model_admin(User) if admin.site.is_registered(User) else None
BaseUserAdmin = type(_registered) if _registered is not None else UserAdmin


class PrivacyUserAdmin(BaseUserAdmin):
    actions = [*(BaseUserAdmin.actions or []), "export_data", "erase_data"]
    change_list_template = "admin/privacy/user_change_list.html"

    def get_urls(self):
        report = self.admin_site.admin_view(usage_report_view)
        return [
            path("usage-report/", report, {"model_admin": self}, name="auth_user_usage_report"),
            *super().get_urls(),
        ]

    @admin.action(description="Export data (JSON download)", permissions=["change"])
    def export_data(self, request, queryset):
        users = list(queryset.order_by("pk"))
        if len(users) == 1:
            document = user_export(user=users[0])
            filename = f"mnemo-export-{users[0].get_username()}.json"
        else:
            document = {"users": [user_export(user=user) for user in users]}
            filename = f"mnemo-export-{len(users)}-users.json"
        for user in users:
            self.log_change(request, user, "Exported all data (privacy export).")
        body = json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Erase all data (account included)", permissions=["delete"])
    def erase_data(self, request, queryset):
        """First call renders the confirmation page; the page posts back with `post=yes`."""
        users = list(queryset.order_by("pk"))
        if request.POST.get("post") == "yes":
            erased = rows = files = 0
            for user in users:
                if user.pk == request.user.pk:
                    self.message_user(
                        request,
                        "You cannot erase the account you are signed in with.",
                        messages.ERROR,
                    )
                    continue
                try:
                    report = user_erase(user=user)
                except DomainError as exc:
                    self.message_user(request, f"{user}: {exc.message}", messages.ERROR)
                    continue
                erased += 1
                rows += report.rows_deleted
                files += report.files_deleted
            if erased:
                self.message_user(
                    request,
                    f"Erased {erased} user(s): {rows} rows and {files} files deleted.",
                    messages.SUCCESS,
                )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Erase all data?",
            "opts": self.model._meta,
            "users": [(user, sorted(user_data_counts(user=user).items())) for user in users],
            "queryset": users,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "signed_in_user_selected": any(user.pk == request.user.pk for user in users),
        }
        return TemplateResponse(request, "admin/privacy/erase_confirmation.html", context)


if _registered is not None:
    admin.site.unregister(User)
admin.site.register(User, PrivacyUserAdmin)
