from __future__ import annotations

from django.apps import AppConfig


class SavedViewsConfig(AppConfig):
    name = "casework.cases.saved_views"
    label = "saved_views"
    verbose_name = "Saved queue views"

    def ready(self) -> None:
        from casework.cases.navigation import nav_read_register, nav_watch
        from casework.cases.saved_views.models import SavedView
        from casework.cases.saved_views.selectors import saved_views_pinned_nav

        # The views pinned into every page's navigation; a view shared with a team shows in
        # its members' navigation, so any change is everyone's.
        nav_read_register("pinned", saved_views_pinned_nav)
        nav_watch(SavedView, uid="saved_view")
