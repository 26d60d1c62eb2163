from django.urls import path

from imports_app.api import imports

urlpatterns = [
    path("imports", imports.ImportCreateApi.as_view(), name="imports"),
    path("imports/<uuid:import_id>", imports.ImportDetailApi.as_view(), name="import-detail"),
]
