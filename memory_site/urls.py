from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memory_site.health import HealthApi

handler400 = "memory_site.errors.json_400"
handler404 = "memory_site.errors.json_404"
handler500 = "memory_site.errors.json_500"

api_v1 = [
    path("", include("sessions_app.api.urls")),
    path("", include("ingestion_app.api.urls")),
    path("", include("entities_app.api.urls")),
    path("", include("imports_app.api.urls")),
    path("", include("context_app.api.urls")),
    path("", include("profile_app.api.urls")),
    path("", include("webhooks_app.api.urls")),
    path("", include("privacy_app.api.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/health", HealthApi.as_view(), name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include(api_v1)),
    # OpenAI-compatible endpoint at the site root, where the `openai` SDK expects `/v1`.
    path("v1/", include("gateway_app.openai_compat.urls")),
    path("", include("web_app.urls")),
]
