package adapter

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode) // web's router, in the tests that serve through it
	os.Exit(m.Run())
}
