from django.urls import path

from entities_app.api import entities

urlpatterns = [
    path("entities", entities.EntityListApi.as_view(), name="entities"),
    path("entities/merge", entities.EntityMergeApi.as_view(), name="entity-merge"),
    path("entities/<int:entity_id>", entities.EntityDetailApi.as_view(), name="entity-detail"),
]
