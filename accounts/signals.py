"""What the accounts app tells the rest of the project, without knowing who listens."""

from django.dispatch import Signal

# A person's sessions were ended (signed out everywhere, password changed, deactivated), after
# the transaction that ended them commits. Sent with user_id and keep_session: the session whose
# sockets stay open (the browser that changed the password), or None. The chat and dashboard
# close that person's other sockets (dashboard/apps.py).
account_signed_out = Signal()
