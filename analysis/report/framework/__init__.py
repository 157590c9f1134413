"""What every report family builds on: the Report that writes figures, tables and numbers whole or
not at all, and FigureData (common.py); formatting of tables (formatting.py); the one module-level
matplotlib import (plotting.py); which runs a family reads (selection.py); what every verdict rests
on (claims.py); the page that shows it all (page.py, page_text.py)."""
