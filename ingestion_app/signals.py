"""What the store announces to the apps above it.

``memory_items_written`` is sent, inside the writer's transaction, after the store inserted
memory items one by one or in bulk (``sender`` is MemoryItem, ``items`` the saved rows). The
entity layer (entities_app) extracts and links their entities on it, so the store never
imports the app that reads its rows. COPY imports do not send it: an import extracts its
entities after its transaction (imports_app.services.entity_backfill). A receiver's exception
propagates to the writer, which decides whether the write survives it.

``store_analyzed`` is sent after the store analyzed its table (``sender`` is MemoryItem).
"""

from django.dispatch import Signal

memory_items_written = Signal()

# Sent after the store ran ANALYZE on its table (memory_store_vacuum): the search side drops
# what it keeps of the planner's table figures (retrieval.scope.table_stats).
store_analyzed = Signal()
