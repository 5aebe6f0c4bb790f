# schemas.py
from pydantic import BaseModel


class Ticket(BaseModel):
    repo: str
    branch: str = "main"


class Review(BaseModel):
    repo: str
    branch: str


class Verdict(BaseModel):
    ok: bool
